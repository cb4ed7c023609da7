package loadgen

import (
	"errors"
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"

	hdr "github.com/HdrHistogram/hdrhistogram-go"

	"github.com/protobench/protobench/internal/record"
)

// MergeInfo says how a result was merged from the results of several load generators that
// shared one step (tool.Split): how far apart their measured windows were, and what each did.
// It is the result's "parts" field, absent from a single generator's result.
type MergeInfo struct {
	Count int `json:"count"`
	// StartAt is the shared start every part was given (--start-at), when they were all given
	// the same one.
	StartAt string `json:"start_at,omitempty"`
	// StartSpreadS and EndSpreadS are how far apart the parts' measured windows began and ended;
	// OverlapS is how long all of them measured at once. The result's duration_s is the union
	// of the windows.
	StartSpreadS float64 `json:"start_spread_s"`
	EndSpreadS   float64 `json:"end_spread_s"`
	OverlapS     float64 `json:"overlap_s"`
	// WindowToleranceS is how far apart the windows may begin and end and still count as one
	// (record.PartsApartFraction of the shortest); Throughput says how throughput_rps was had:
	// the sum of the parts' rates when the windows coincide within it, else the total over the
	// union of the windows, and the result is flagged parts-apart (mergeWindow).
	WindowToleranceS float64 `json:"window_tolerance_s"`
	Throughput       string  `json:"throughput"`
	// SeriesLatency says how the per-second latencies were combined (see Merge).
	SeriesLatency string        `json:"series_latency"`
	Parts         []PartSummary `json:"parts"`
}

// PartSummary is one part's own figures, kept beside the merged ones.
type PartSummary struct {
	Part          string  `json:"part"` // its "part" label, or its position from 1
	Connections   int     `json:"connections"`
	Concurrency   int     `json:"concurrency"`
	Rate          float64 `json:"rate,omitempty"`
	Requests      int64   `json:"requests"`
	Errors        int64   `json:"errors"`
	ThroughputRPS float64 `json:"throughput_rps"`
	DurationS     float64 `json:"duration_s"`
	StartUnix     float64 `json:"start_unix"`
	EndUnix       float64 `json:"end_unix"`
	// StartWaitS and StartLateS are how long the part waited for the shared start, or how late
	// it was for it (Result.StartWaitS, StartLateS).
	StartWaitS   float64 `json:"start_wait_s,omitempty"`
	StartLateS   float64 `json:"start_late_s,omitempty"`
	LatencyP99Ms float64 `json:"latency_p99_ms"`
	// LatencyCount is how many latencies the part's histogram held when it was merged.
	LatencyCount     int64    `json:"latency_count"`
	ClientCPUSeconds float64  `json:"client_cpu_seconds"`
	ClientGOMAXPROCS int      `json:"client_gomaxprocs"`
	Error            string   `json:"error,omitempty"`
	Args             []string `json:"args,omitempty"`
}

// seriesLatencyNote is MergeInfo.SeriesLatency: the one figure of a merge that is not exact.
const seriesLatencyNote = "per-second p50 and p99 are the largest of the parts' (an upper bound: a percentile of " +
	"the merged requests lies between the parts' smallest and largest); per-second max is exact; the run's " +
	"percentiles and spectra come from the merged histograms"

// Merge combines the results of load generators that shared one step into the result one
// generator would have reported, in the same JSON shape. It is lossless where the results are:
//   - The corrected-latency, service-time and scheduler-lag histograms are merged (HdrHistogram
//     Merge, exact for histograms of the same layout), and every percentile, summary and
//     spectrum is read from the merged histograms. Percentiles are never averaged: the average
//     of two p99s is not the p99 of anything.
//   - Requests, errors, errors by code, incomplete, bytes, messages, workers and client CPU are
//     summed; so are connections (each part opened its own) and, in the open model, the rate.
//   - The measured window is the union of the parts' windows. The throughput is the sum of
//     the parts' own rates when their windows coincide (parts given one shared start,
//     --start-at), else the total over the union, flagged parts-apart (mergeWindow).
//   - The per-second series (and the timeline, for in-process results) is summed second by
//     second of each part's own window; per-second percentiles cannot be merged from summaries,
//     so they are the parts' largest (MergeInfo.SeriesLatency).
//
// It refuses parts of different steps (target, method, model, pattern, payload, tool,
// scenario, step). Parts read from JSON carry their histograms in Histograms; a part that
// completed requests but lacks them is refused, since its percentiles could not be merged.
func Merge(parts []*Result) (*Result, error) {
	if err := checkParts(parts); err != nil {
		return nil, err
	}
	lat, svc, lag, latCounts, err := mergeHistograms(parts)
	if err != nil {
		return nil, err
	}
	r := mergedBase(parts)
	info := &MergeInfo{Count: len(parts), SeriesLatency: seriesLatencyNote}
	flags := sumParts(r, info, parts, latCounts)
	// The window and the throughput (mergewindow.go).
	start := mergeWindow(parts, r, info, flags)
	setHistogramFigures(r, lat, svc, lag)
	r.Series = mergeSeries(parts, start)
	r.points = mergeResultPoints(parts, start)
	decideMergedFlags(r, flags)
	r.Parts = info
	return r, nil
}

// checkParts refuses a missing part and parts of different steps.
func checkParts(parts []*Result) error {
	if len(parts) == 0 {
		return errors.New("merge: no results to merge")
	}
	for i, p := range parts {
		if p == nil {
			return fmt.Errorf("merge: part %d is missing", i+1)
		}
	}
	for i, p := range parts[1:] {
		if err := sameStep(parts[0], p, i+2); err != nil {
			return err
		}
	}
	return nil
}

// mergeHistograms merges the parts' corrected-latency, service-time and scheduler-lag
// histograms; lag is nil when no part has one (the closed model). latCounts are how many
// latencies each part's histogram held.
func mergeHistograms(parts []*Result) (lat, svc, lag *hdr.Histogram, latCounts []int64, err error) {
	lat, svc, lag = NewHistogram(), NewHistogram(), NewHistogram()
	haveLag := false
	latCounts = make([]int64, len(parts))
	for i, p := range parts {
		n, err := mergeInto(lat, p.latency, p.Histograms.Latency, p.Requests, i+1, "latency")
		if err != nil {
			return nil, nil, nil, nil, err
		}
		latCounts[i] = n
		if _, err := mergeInto(svc, p.service, p.Histograms.ServiceTime, p.Requests, i+1, "service_time"); err != nil {
			return nil, nil, nil, nil, err
		}
		if p.Histograms.SchedulerLag != "" {
			haveLag = true
			if _, err := mergeInto(lag, nil, p.Histograms.SchedulerLag, p.Requests, i+1, "scheduler_lag"); err != nil {
				return nil, nil, nil, nil, err
			}
		}
	}
	if !haveLag {
		lag = nil
	}
	return lat, svc, lag, latCounts, nil
}

// mergedBase is the merged result before any part is added: what every part shares.
func mergedBase(parts []*Result) *Result {
	first := parts[0]
	return &Result{
		Record: record.Record{
			Scenario: first.Scenario, Step: first.Step, Repeat: first.Repeat,
			Target: first.Target, Tool: first.Tool, Method: first.Method, Model: first.Model,
			PayloadBytes: first.PayloadBytes, HTTPVersion: first.HTTPVersion, Encoding: first.Encoding,
			RequestsPerConnection: first.RequestsPerConnection,
			Compression:           first.Compression,
			Flags:                 []string{},
		},
		TargetURL:    first.TargetURL,
		Pattern:      first.Pattern,
		Labels:       commonLabels(parts),
		ErrorsByCode: map[string]int64{},
		Series:       []SeriesPoint{},
		Histograms:   HistogramExport{Encoding: "hdrhistogram-v2-compressed-base64", Unit: "us"},
	}
}

// sumParts adds every part's counts to r and its summary to info, and returns the union of the
// parts' flags.
func sumParts(r *Result, info *MergeInfo, parts []*Result, latCounts []int64) map[string]bool {
	var errs, schedules, warnings []string
	flags := map[string]bool{}
	// Concurrency is the first part's, the largest (tool.Split gives remainders to the first
	// parts); when the parts' differ, connections × concurrency is no longer the requests in
	// flight, and Topology says how they sat.
	r.Concurrency = parts[0].Concurrency
	var shapes []string
	for i, p := range parts {
		addCounts(r, p)
		shapes = append(shapes, fmt.Sprintf("%d×%d", p.Connections, p.Concurrency))
		for _, f := range p.Flags {
			flags[f] = true
		}
		name := p.Labels["part"]
		if name == "" {
			name = strconv.Itoa(i + 1)
		}
		if p.Error != "" {
			errs = append(errs, "part "+name+": "+p.Error)
		}
		if p.ServerCountWarning != "" {
			warnings = append(warnings, "part "+name+": "+p.ServerCountWarning)
		}
		if p.Schedule != "" {
			schedules = append(schedules, p.Schedule)
		}
		info.Parts = append(info.Parts, partSummary(name, p, latCounts[i]))
	}
	r.Rate = round3(r.Rate)
	r.ClientCPUSeconds = round3(r.ClientCPUSeconds)
	r.Topology = fmt.Sprintf("%d clients: %s", len(parts), strings.Join(shapes, " + "))
	r.MethodMix = mergeMix(parts)
	r.Schedule = strings.Join(schedules, " + ")
	r.Error = strings.Join(errs, "; ")
	r.ServerCountWarning = strings.Join(warnings, "; ")
	return flags
}

// addCounts adds one part's counts (and the notes r lacks) to r.
func addCounts(r, p *Result) {
	r.Connections += p.Connections
	r.Rate += p.Rate
	r.Requests += p.Requests
	r.Errors += p.Errors
	r.Incomplete += p.Incomplete
	r.Unsent += p.Unsent
	for code, n := range p.ErrorsByCode {
		r.ErrorsByCode[code] += n
	}
	r.BytesSent += p.BytesSent
	r.BytesReceived += p.BytesReceived
	r.MessagesReceived += p.MessagesReceived
	if p.ClientCompressedReplies != nil {
		n := *p.ClientCompressedReplies
		if r.ClientCompressedReplies != nil {
			n += *r.ClientCompressedReplies
		}
		r.ClientCompressedReplies = &n
	}
	r.ClientSent += p.ClientSent
	r.ClientCPUSeconds += p.ClientCPUSeconds
	r.ClientGOMAXPROCS += p.ClientGOMAXPROCS
	r.Workers += p.Workers
	r.WarmupS = max(r.WarmupS, p.WarmupS)
	r.Aborted = r.Aborted || p.Aborted
	r.Notes = appendMissing(r.Notes, p.Notes...)
}

// partSummary is one part's own figures, named name.
func partSummary(name string, p *Result, latCount int64) PartSummary {
	return PartSummary{
		Part: name, Connections: p.Connections, Concurrency: p.Concurrency, Rate: p.Rate,
		Requests: p.Requests, Errors: p.Errors, ThroughputRPS: p.ThroughputRPS, DurationS: p.DurationS,
		StartUnix: p.StartUnix, EndUnix: p.EndUnix, StartWaitS: p.StartWaitS, StartLateS: p.StartLateS,
		LatencyP99Ms: p.LatencyMs.P99, LatencyCount: latCount,
		ClientCPUSeconds: p.ClientCPUSeconds, ClientGOMAXPROCS: p.ClientGOMAXPROCS,
		Error: p.Error, Args: p.Args,
	}
}

// decideMergedFlags sets r's flags: the parts' own (rate-not-met stays if any part missed its
// share), with errors, failed and client-latency decided again on the totals.
func decideMergedFlags(r *Result, flags map[string]bool) {
	delete(flags, record.FlagErrors)
	delete(flags, record.FlagFailed)
	delete(flags, record.FlagClientLatency)
	if record.ClientLatency(r.Record) {
		flags[record.FlagClientLatency] = true
	}
	if r.Requests > 0 && float64(r.Errors) > 0.01*float64(r.Requests) {
		flags[record.FlagErrors] = true
	}
	if r.Requests == 0 {
		flags[record.FlagFailed] = true
		if r.Error == "" {
			r.Error = "no request completed in the measured window"
		}
	}
	for f := range flags {
		r.Flags = append(r.Flags, f)
	}
	sort.Strings(r.Flags)
}

// sameStep refuses to merge results that did not measure the same step.
func sameStep(a, b *Result, k int) error {
	for _, c := range []struct{ field, a, b string }{
		{"tool", a.Tool, b.Tool}, {"target", a.Target, b.Target}, {"method", a.Method, b.Method},
		{"model", a.Model, b.Model}, {"pattern", a.Pattern, b.Pattern},
		{"payload_bytes", strconv.Itoa(a.PayloadBytes), strconv.Itoa(b.PayloadBytes)},
		{"http_version", a.HTTPVersion, b.HTTPVersion}, {"encoding", a.Encoding, b.Encoding},
		{"scenario", a.Scenario, b.Scenario}, {"step", a.Step, b.Step},
	} {
		if c.a != c.b {
			return fmt.Errorf("merge: part %d measured %s %q, part 1 %q: these are results of different steps", k, c.field, c.b, c.a)
		}
	}
	return nil
}

// mergeInto adds one part's histogram to dst: the in-process one when there is one, else the
// exported encoding. An empty encoding is an empty histogram only for a part that completed no
// request. It returns how many values the part's histogram held.
func mergeInto(dst, h *hdr.Histogram, encoded string, requests int64, k int, name string) (int64, error) {
	if h == nil && encoded != "" {
		var err error
		if h, err = DecodeHistogram(encoded); err != nil {
			return 0, fmt.Errorf("merge: part %d: histograms.%s: %v", k, name, err)
		}
	}
	if h == nil {
		if requests > 0 {
			return 0, fmt.Errorf("merge: part %d completed %d requests but carries no %s histogram, so its percentiles cannot be merged", k, requests, name)
		}
		return 0, nil
	}
	if dropped := dst.Merge(h); dropped > 0 {
		return 0, fmt.Errorf("merge: part %d: %d %s values fell outside the histogram's range", k, dropped, name)
	}
	return h.TotalCount(), nil
}

// commonLabels are the labels every part carries with the same value, less "part".
func commonLabels(parts []*Result) map[string]string {
	if parts[0].Labels == nil {
		return nil
	}
	out := map[string]string{}
	for k, v := range parts[0].Labels {
		if k == "part" {
			continue
		}
		same := true
		for _, p := range parts[1:] {
			same = same && p.Labels[k] == v
		}
		if same {
			out[k] = v
		}
	}
	return out
}

// mergeMix adds up how many connections called each method of a mix.
func mergeMix(parts []*Result) []MethodWeight {
	var out []MethodWeight
	for _, p := range parts {
		for _, m := range p.MethodMix {
			i := slices.IndexFunc(out, func(o MethodWeight) bool { return o.Method == m.Method })
			if i < 0 {
				out = append(out, m)
				continue
			}
			out[i].Connections += m.Connections
		}
	}
	return out
}

func appendMissing(list []string, items ...string) []string {
	for _, s := range items {
		if !slices.Contains(list, s) {
			list = append(list, s)
		}
	}
	return list
}
