package loadgen

import (
	"context"
	"errors"
	"time"

	hdr "github.com/HdrHistogram/hdrhistogram-go"

	"github.com/protobench/protobench/internal/record"
)

// SeriesPoint is one second of a run: requests that completed in it, and their latency.
type SeriesPoint struct {
	TS            float64 `json:"t_s"` // end of the interval, seconds since the measured window began
	Requests      int64   `json:"requests"`
	Errors        int64   `json:"errors"`
	ThroughputRPS float64 `json:"throughput_rps"`
	TargetRPS     float64 `json:"target_rps,omitempty"` // open model
	P50Ms         float64 `json:"p50_ms"`
	P99Ms         float64 `json:"p99_ms"`
	Inflight      int64   `json:"inflight"`
	// SchedulerLagMaxMs is the longest any request waited past its intended send time.
	SchedulerLagMaxMs float64 `json:"scheduler_lag_max_ms"`

	span time.Duration
}

// collector wakes once a second, swaps every recorder's interval out, and turns the merged
// interval into a series point, a progress line and live metrics. It also takes the snapshots
// (bytes, CPU time, server counts) that bound the measured window.
type collector struct {
	e     *engine
	start time.Time

	spares   []interval
	ivLat    *hdr.Histogram
	ivSvc    *hdr.Histogram
	cumLat   *hdr.Histogram // measured so far, for "p99 so far"
	series   []SeriesPoint
	points   []record.TimeseriesPoint // warm-up included
	lastTick time.Time
	// prevLat and prevSvc hold the last point's interval, so that the drain's sliver can be
	// folded into it with exact percentiles.
	prevLat *hdr.Histogram
	prevSvc *hdr.Histogram

	measured     bool
	measuredReqs int64
	measuredErrs int64

	live map[string]int64
}

func newCollector(e *engine, start time.Time) *collector {
	c := &collector{
		e: e, start: start, lastTick: start,
		ivLat: newSeriesHistogram(), ivSvc: newSeriesHistogram(), cumLat: newSeriesHistogram(),
		prevLat: newSeriesHistogram(), prevSvc: newSeriesHistogram(),
		live: map[string]int64{},
	}
	for range e.recorders {
		c.spares = append(c.spares, newInterval())
	}
	return c
}

// markMeasureStart starts the series (and takes the window's snapshots if no worker has yet).
func (c *collector) markMeasureStart() {
	c.measured = true
	c.e.snapshotStart()
}

// windowStart holds the snapshots the measured window is counted from.
type windowStart struct {
	wire             [4]int64
	cpu              float64
	serverCounted    bool
	serverCountStart int64
	serverCountErr   error
}

// snapshotStart takes the window's snapshots once, at the first of: the collector's tick at the
// window's start, or the first measured request of any worker. Either may be late on a busy
// machine; taking the earlier keeps bytes and CPU consistent with the requests counted.
func (e *engine) snapshotStart() {
	e.startOnce.Do(func() {
		s := &e.start
		s.wire = e.wireTotals()
		s.cpu = cpuSeconds()
		if sc, ok := e.driver.(ServerCounter); ok {
			ctx, cancel := context.WithTimeout(context.Background(), e.cfg.ConnectTimeout)
			s.serverCountStart, s.serverCountErr = sc.ServerCount(ctx, e.cfg)
			cancel()
			s.serverCounted = !errors.Is(s.serverCountErr, ErrNotCounted)
		}
		e.started.Store(true)
	})
}

func (c *collector) loop(stop <-chan struct{}) {
	ms := c.e.sched.MeasureStart()
	for {
		next := c.lastTick.Add(time.Second)
		if !c.measured && next.After(ms) {
			next = ms
		} else if c.measured {
			k := c.lastTick.Sub(ms)/time.Second + 1
			next = ms.Add(k * time.Second)
		}
		timer := time.NewTimer(time.Until(next))
		select {
		case <-stop:
			timer.Stop()
			c.tick(c.e.clock.Now(), true)
			return
		case <-timer.C:
		}
		now := c.e.clock.Now()
		c.tick(now, false)
		if !c.measured && !now.Before(ms) {
			c.markMeasureStart()
		}
	}
}

// tick closes the interval that ends now; final is the last one, after the drain.
func (c *collector) tick(now time.Time, final bool) {
	iv := c.swapIntervals()
	span := now.Sub(c.lastTick)
	c.lastTick = now
	rate := 0.0
	if span > 0 {
		rate = record.SuccessRPS(iv.requests, iv.errors, span.Seconds())
	}
	c.updateLive(iv)
	if c.measured && span > 0 {
		c.cumLat.Merge(c.ivLat)
		c.measuredReqs += iv.requests
		c.measuredErrs += iv.errors
	}
	if n := len(c.series); final && n > 0 && span < time.Second/2 {
		// The drain after the last full second is a sliver: fold its stragglers into the last
		// point rather than plot a sliver's rate as a second of its own.
		c.foldSliver(iv, span)
	} else if span > 0 {
		c.appendPoint(now, span, rate, iv)
	}
	c.progress(now, rate, iv.inflight)
}

// intervalCounts are one interval's counts, summed over the recorders.
type intervalCounts struct {
	requests, errors, inflight int64
	lagMax                     time.Duration
}

// swapIntervals gives every recorder a fresh interval and merges the ones it hands back into
// ivLat and ivSvc; the spares are reused so that a tick allocates no histogram.
func (c *collector) swapIntervals() intervalCounts {
	c.ivLat.Reset()
	c.ivSvc.Reset()
	var iv intervalCounts
	for i, r := range c.e.recorders {
		fresh := c.spares[i]
		fresh.latency.Reset()
		fresh.service.Reset()
		fresh.requests, fresh.errors, fresh.lagMax = 0, 0, 0
		old := r.swap(fresh)
		c.ivLat.Merge(old.latency)
		c.ivSvc.Merge(old.service)
		iv.requests += old.requests
		iv.errors += old.errors
		iv.lagMax = max(iv.lagMax, old.lagMax)
		iv.inflight += r.inflight.Load()
		c.spares[i] = old
	}
	return iv
}

// updateLive hands the interval to the live /metrics endpoint, when there is one.
func (c *collector) updateLive(iv intervalCounts) {
	l := c.e.opts.Live
	if l == nil {
		return
	}
	clear(c.live)
	for _, r := range c.e.recorders {
		r.liveCodeCounts(c.live)
	}
	l.update(c.ivLat, c.ivSvc, c.live, iv.inflight, iv.lagMax)
}

// foldSliver adds the interval to the last series point and timeline point, with percentiles
// read again from the last interval's histograms merged with this one's.
func (c *collector) foldSliver(iv intervalCounts, span time.Duration) {
	c.prevLat.Merge(c.ivLat)
	c.prevSvc.Merge(c.ivSvc)
	last := &c.series[len(c.series)-1]
	last.Requests += iv.requests
	last.Errors += iv.errors
	last.span += span
	last.ThroughputRPS = round3(record.SuccessRPS(last.Requests, last.Errors, last.span.Seconds()))
	last.P50Ms, last.P99Ms = ms2(c.prevLat, 50), ms2(c.prevLat, 99)
	last.SchedulerLagMaxMs = max(last.SchedulerLagMaxMs, lagMs(iv.lagMax))
	p := &c.points[len(c.points)-1]
	p.Requests, p.Errors, p.ThroughputRPS = last.Requests, last.Errors, last.ThroughputRPS
	p.SpanS = round3(last.span.Seconds())
	p.SchedulerLagMaxMs = last.SchedulerLagMaxMs
	p.LatencyMs = pointLatency(c.prevLat)
	if c.e.cfg.Open() {
		svc := pointLatency(c.prevSvc)
		p.ServiceTimeMs = &svc
	}
}

// appendPoint adds the interval to the timeline and, once measuring, to the series; its
// histograms become the last interval's, which a final sliver may be folded into.
func (c *collector) appendPoint(now time.Time, span time.Duration, rate float64, iv intervalCounts) {
	ms := c.e.sched.MeasureStart()
	p := record.TimeseriesPoint{
		TS:                round3(now.Sub(ms).Seconds()),
		SpanS:             round3(span.Seconds()),
		Warmup:            !c.measured,
		Requests:          iv.requests,
		Errors:            iv.errors,
		ThroughputRPS:     round3(rate),
		TargetRPS:         round3(c.e.sched.TargetRate(now.Add(-span / 2))),
		LatencyMs:         pointLatency(c.ivLat),
		Inflight:          iv.inflight,
		SchedulerLagMaxMs: lagMs(iv.lagMax),
	}
	if c.e.cfg.Open() {
		svc := pointLatency(c.ivSvc)
		p.ServiceTimeMs = &svc
	}
	c.points = append(c.points, p)
	if c.measured {
		c.series = append(c.series, SeriesPoint{
			span:              span,
			TS:                p.TS,
			Requests:          iv.requests,
			Errors:            iv.errors,
			ThroughputRPS:     p.ThroughputRPS,
			TargetRPS:         p.TargetRPS,
			P50Ms:             p.LatencyMs.P50,
			P99Ms:             p.LatencyMs.P99,
			Inflight:          iv.inflight,
			SchedulerLagMaxMs: p.SchedulerLagMaxMs,
		})
	}
	c.ivLat, c.prevLat = c.prevLat, c.ivLat
	c.ivSvc, c.prevSvc = c.prevSvc, c.ivSvc
}

// progress reports the run so far to the progress line, when there is one.
func (c *collector) progress(now time.Time, rate float64, inflight int64) {
	f := c.e.opts.Progress
	if f == nil {
		return
	}
	ms := c.e.sched.MeasureStart()
	p := Progress{RateRPS: rate, TargetRPS: c.e.sched.TargetRate(now), Requests: c.measuredReqs, Errors: c.measuredErrs, Inflight: inflight}
	if !c.measured {
		p.Warmup, p.Elapsed, p.Total = true, now.Sub(c.start), ms.Sub(c.start)
	} else {
		p.Elapsed, p.Total = now.Sub(ms), c.e.sched.End().Sub(ms)
		p.P99Ms = ms2(c.cumLat, 99)
	}
	f(p)
}

// pointLatency summarizes an interval's histogram (microseconds) in milliseconds.
func pointLatency(h *hdr.Histogram) record.PointLatency {
	if h.TotalCount() == 0 {
		return record.PointLatency{}
	}
	return record.PointLatency{P50: ms2(h, 50), P99: ms2(h, 99), Max: ms(h.Max())}
}

func lagMs(d time.Duration) float64 { return round3(float64(d.Microseconds()) / 1000) }

func ms2(h *hdr.Histogram, pct float64) float64 {
	if h.TotalCount() == 0 {
		return 0
	}
	return ms(h.ValueAtPercentile(pct))
}

// wireTotals sums every connection's counters: sent, received, messages, compressed replies.
func (e *engine) wireTotals() [4]int64 {
	e.mu.Lock()
	defer e.mu.Unlock()
	var t [4]int64
	for _, w := range e.wires {
		t[0] += w.Sent.Load()
		t[1] += w.Received.Load()
		t[2] += w.Messages.Load()
		t[3] += w.CompressedReplies.Load()
	}
	return t
}
