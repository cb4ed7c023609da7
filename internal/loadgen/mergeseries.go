package loadgen

import (
	"errors"
	"fmt"
	"slices"

	"github.com/protobench/protobench/internal/record"
)

// MergeTimeseries combines the timelines (`--timeseries`) of load generators that shared one
// step, as Merge does their results: the window is the union of theirs, points are summed
// second by second of each part's own window (warm-up points counted back from the window's
// start, measured ones forward from it), and each point's t_s counts from the merged start.
// Per-second p50 and p99 are the parts' largest, an upper bound (MergeInfo.SeriesLatency).
func MergeTimeseries(parts []*record.Timeseries) (*record.Timeseries, error) {
	if len(parts) == 0 {
		return nil, errors.New("merge timeseries: no timelines to merge")
	}
	first := parts[0]
	for i, p := range parts {
		if p == nil {
			return nil, fmt.Errorf("merge timeseries: part %d is missing", i+1)
		}
		for _, c := range []struct{ field, a, b string }{
			{"target", first.Target, p.Target}, {"method", first.Method, p.Method}, {"model", first.Model, p.Model},
			{"tool", first.Tool, p.Tool}, {"scenario", first.Scenario, p.Scenario}, {"step", first.Step, p.Step},
		} {
			if c.a != c.b {
				return nil, fmt.Errorf("merge timeseries: part %d measured %s %q, part 1 %q: these are timelines of different steps", i+1, c.field, c.b, c.a)
			}
		}
	}
	start, end := first.StartUnix, first.EndUnix
	for _, p := range parts {
		start, end = min(start, p.StartUnix), max(end, p.EndUnix)
	}
	return &record.Timeseries{
		Version: record.TimeseriesVersion, Scenario: first.Scenario, Step: first.Step,
		Target: first.Target, Tool: first.Tool, Method: first.Method, Model: first.Model,
		StartUnix: start, EndUnix: end, IntervalS: first.IntervalS,
		Points: mergePoints(parts, start),
	}, nil
}

// mergeSeries sums the parts' per-second series second by second of their own windows.
func mergeSeries(parts []*Result, start float64) []SeriesPoint {
	out := []SeriesPoint{}
	for _, p := range parts {
		offset := p.StartUnix - start
		for i, s := range p.Series {
			if i == len(out) {
				out = append(out, SeriesPoint{})
			}
			o := &out[i]
			o.TS = max(o.TS, round3(offset+s.TS))
			o.Requests += s.Requests
			o.Errors += s.Errors
			o.ThroughputRPS = round3(o.ThroughputRPS + s.ThroughputRPS)
			o.TargetRPS = round3(o.TargetRPS + s.TargetRPS)
			o.P50Ms = max(o.P50Ms, s.P50Ms)
			o.P99Ms = max(o.P99Ms, s.P99Ms)
			o.Inflight += s.Inflight
			o.SchedulerLagMaxMs = max(o.SchedulerLagMaxMs, s.SchedulerLagMaxMs)
			o.span = max(o.span, s.span)
		}
	}
	return out
}

// mergeResultPoints merges the parts' timelines when every part has one (in-process results);
// else there is none.
func mergeResultPoints(parts []*Result, start float64) []record.TimeseriesPoint {
	for _, p := range parts {
		if p.points == nil {
			return nil
		}
	}
	series := make([]*record.Timeseries, len(parts))
	for i, p := range parts {
		series[i] = p.Timeseries()
	}
	return mergePoints(series, start)
}

// mergePoints sums timelines point by point: warm-up points aligned on the last one (which
// closes at the window's start), measured points on the first.
func mergePoints(parts []*record.Timeseries, start float64) []record.TimeseriesPoint {
	var warm, measured [][]record.TimeseriesPoint
	nWarm := 0
	for _, p := range parts {
		i := slices.IndexFunc(p.Points, func(q record.TimeseriesPoint) bool { return !q.Warmup })
		if i < 0 {
			i = len(p.Points)
		}
		warm = append(warm, p.Points[:i])
		measured = append(measured, p.Points[i:])
		nWarm = max(nWarm, i)
	}
	out := make([]record.TimeseriesPoint, nWarm)
	for i := range out {
		out[i].Warmup = true
	}
	for k, w := range warm {
		offset := parts[k].StartUnix - start
		for j, q := range w {
			addPoint(&out[nWarm-len(w)+j], q, offset)
		}
	}
	for k, m := range measured {
		offset := parts[k].StartUnix - start
		for i, q := range m {
			if nWarm+i == len(out) {
				out = append(out, record.TimeseriesPoint{})
			}
			addPoint(&out[nWarm+i], q, offset)
		}
	}
	if out == nil {
		out = []record.TimeseriesPoint{}
	}
	return out
}

// addPoint adds one part's point to a merged one whose t_s counts from a start offset seconds
// before the part's.
func addPoint(o *record.TimeseriesPoint, q record.TimeseriesPoint, offset float64) {
	ts := round3(offset + q.TS)
	if o.SpanS == 0 { // the first part's point: a real point always spans some time
		o.TS = ts
	} else {
		o.TS = max(o.TS, ts)
	}
	o.SpanS = max(o.SpanS, q.SpanS)
	o.Requests += q.Requests
	o.Errors += q.Errors
	o.ThroughputRPS = round3(o.ThroughputRPS + q.ThroughputRPS)
	o.TargetRPS = round3(o.TargetRPS + q.TargetRPS)
	o.LatencyMs = maxLatency(o.LatencyMs, q.LatencyMs)
	if q.ServiceTimeMs != nil {
		s := q.ServiceTimeMs
		if o.ServiceTimeMs != nil {
			m := maxLatency(*o.ServiceTimeMs, *s)
			s = &m
		}
		c := *s
		o.ServiceTimeMs = &c
	}
	o.Inflight += q.Inflight
	o.SchedulerLagMaxMs = max(o.SchedulerLagMaxMs, q.SchedulerLagMaxMs)
}

func maxLatency(a, b record.PointLatency) record.PointLatency {
	return record.PointLatency{P50: max(a.P50, b.P50), P99: max(a.P99, b.P99), Max: max(a.Max, b.Max)}
}
