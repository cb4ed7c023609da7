package loadgen

import (
	"bytes"
	"encoding/json"
	"math"
	"math/rand/v2"
	"reflect"
	"strconv"
	"strings"
	"testing"

	"github.com/protobench/protobench/internal/record"
)

// syntheticPart is a result as `protobench load` writes it, read back from JSON (so only the
// exported histograms carry the latencies), with the given latencies in microseconds.
func syntheticPart(t *testing.T, part string, start float64, latencies []int64, mutate func(*Result)) *Result {
	t.Helper()
	lat, svc := NewHistogram(), NewHistogram()
	for _, v := range latencies {
		_ = lat.RecordValue(v)
		_ = svc.RecordValue(v / 2)
	}
	r := &Result{
		Record: record.Record{
			Scenario: "s", Step: "getuser", Target: "grpc", Tool: "protobench", Method: "GetUser", Model: "closed",
			Connections: 2, Concurrency: 8, Requests: int64(len(latencies)), Errors: 3,
			DurationS: 10, StartUnix: start, EndUnix: start + 10, Flags: []string{}, Incomplete: 1,
		},
		Labels:           map[string]string{"scenario": "s", "step": "getuser", "part": part},
		ErrorsByCode:     map[string]int64{"grpc:Unavailable": 2, "transport:eof": 1},
		BytesSent:        1000,
		BytesReceived:    2000,
		ClientCPUSeconds: 4,
		ClientGOMAXPROCS: 2,
		Workers:          2,
		Series: []SeriesPoint{
			{TS: 1, Requests: 10, ThroughputRPS: 10, P50Ms: 1, P99Ms: 2, Inflight: 16},
			{TS: 2, Requests: 20, ThroughputRPS: 20, P50Ms: 1.5, P99Ms: 3, Inflight: 16},
		},
		Histograms: HistogramExport{Encoding: "hdrhistogram-v2-compressed-base64", Unit: "us",
			Latency: EncodeHistogram(lat), ServiceTime: EncodeHistogram(svc)},
	}
	r.ThroughputRPS = float64(r.Requests) / r.DurationS
	r.LatencyMs = Summary(lat)
	if mutate != nil {
		mutate(r)
	}
	b, err := json.Marshal(r)
	if err != nil {
		t.Fatal(err)
	}
	var back Result
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
	return &back
}

func uniform(rng *rand.Rand, n int, lo, hi int64) []int64 {
	out := make([]int64, n)
	for i := range out {
		out[i] = lo + rng.Int64N(hi-lo+1)
	}
	return out
}

// TestMergePercentilesFromTheMergedHistogram: the merged percentiles are those of one histogram
// of every request, and on a skewed case they are far from the average of the parts' p99.
func TestMergePercentilesFromTheMergedHistogram(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	// Part 1 is fast and busy; part 2 slow and quiet (a client node on a congested path).
	fast := uniform(rng, 10000, 800, 1200)
	slow := uniform(rng, 100, 40_000, 60_000)
	parts := []*Result{
		syntheticPart(t, "1", 1000.0, fast, nil),
		syntheticPart(t, "2", 1000.4, slow, nil),
	}
	merged, err := Merge(parts)
	if err != nil {
		t.Fatal(err)
	}

	all := NewHistogram()
	for _, v := range append(append([]int64{}, fast...), slow...) {
		_ = all.RecordValue(v)
	}
	want := Summary(all)
	if merged.LatencyMs != want {
		t.Errorf("merged latency %+v, want the summary of one histogram of all values %+v", merged.LatencyMs, want)
	}
	if !reflect.DeepEqual(merged.LatencySpectrum, Spectrum(all)) {
		t.Error("merged spectrum differs from the spectrum of one histogram of all values")
	}
	for _, q := range []float64{50, 90, 99, 99.9, 99.99, 100} {
		if got, w := merged.LatencyHistogram().ValueAtPercentile(q), all.ValueAtPercentile(q); got != w {
			t.Errorf("p%v: merged %d µs, one histogram %d µs", q, got, w)
		}
	}
	avg := (parts[0].LatencyMs.P99 + parts[1].LatencyMs.P99) / 2
	t.Logf("p99: parts %.3f and %.3f ms, their average %.3f ms, merged %.3f ms", parts[0].LatencyMs.P99, parts[1].LatencyMs.P99, avg, merged.LatencyMs.P99)
	if math.Abs(avg-merged.LatencyMs.P99) < 10 {
		t.Errorf("skewed case: the average of the parts' p99 (%.3f ms) is close to the merged p99 (%.3f ms); the case does not show the difference", avg, merged.LatencyMs.P99)
	}
	if lo, hi := parts[0].LatencyMs.P99, parts[1].LatencyMs.P99; merged.LatencyMs.P99 < lo || merged.LatencyMs.P99 > hi {
		t.Errorf("merged p99 %.3f outside the parts' [%.3f, %.3f]", merged.LatencyMs.P99, lo, hi)
	}

	// The exported histogram round-trips and holds every request.
	b, err := json.Marshal(merged)
	if err != nil {
		t.Fatal(err)
	}
	var back Result
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
	h, err := DecodeHistogram(back.Histograms.Latency)
	if err != nil {
		t.Fatal(err)
	}
	if !h.Equals(all) {
		t.Error("the merged result's exported latency histogram is not the histogram of all values")
	}
	svc, err := DecodeHistogram(back.Histograms.ServiceTime)
	if err != nil || svc.TotalCount() != int64(len(fast)+len(slow)) {
		t.Errorf("service-time histogram: %v, %d values", err, svc.TotalCount())
	}
	if back.Parts == nil || back.Parts.Count != 2 || len(back.Parts.Parts) != 2 || back.Parts.Parts[1].Part != "2" {
		t.Errorf("parts %+v, want both parts described", back.Parts)
	}
}

// TestMergeSumsAndWindow: counts add up, the spread says how far apart the windows were, and
// windows 0.5 s apart (5 % of 10 s) do not coincide: the throughput is the total over their
// union, flagged parts-apart.
func TestMergeSumsAndWindow(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	parts := []*Result{
		syntheticPart(t, "1", 1000.0, uniform(rng, 500, 900, 1100), nil),
		syntheticPart(t, "2", 1000.5, uniform(rng, 300, 900, 1100), func(r *Result) { r.Connections, r.Concurrency = 1, 8 }),
	}
	m, err := Merge(parts)
	if err != nil {
		t.Fatal(err)
	}
	checks := []struct {
		name      string
		got, want any
	}{
		{"requests", m.Requests, int64(800)},
		{"errors", m.Errors, int64(6)},
		{"errors_by_code", m.ErrorsByCode, map[string]int64{"grpc:Unavailable": 4, "transport:eof": 2}},
		{"incomplete", m.Incomplete, int64(2)},
		{"bytes_sent", m.BytesSent, int64(2000)},
		{"bytes_received", m.BytesReceived, int64(4000)},
		{"client_cpu_seconds", m.ClientCPUSeconds, 8.0},
		{"client_gomaxprocs", m.ClientGOMAXPROCS, 4},
		{"connections", m.Connections, 3},
		{"concurrency", m.Concurrency, 8},
		{"topology", m.Topology, "2 clients: 2×8 + 1×8"},
		{"duration_s", m.DurationS, 10.5},
		{"throughput_rps", m.ThroughputRPS, round3((800 - 6) / 10.5)}, // successful requests only
		{"client_cpu_percent", m.ClientCPUPercent, round3(100 * 8 / 10.5)},
		{"start_unix", m.StartUnix, 1000.0},
		{"end_unix", m.EndUnix, 1010.5},
		{"start_spread_s", m.Parts.StartSpreadS, 0.5},
		{"end_spread_s", m.Parts.EndSpreadS, 0.5},
		{"overlap_s", m.Parts.OverlapS, 9.5},
		{"window_tolerance_s", m.Parts.WindowToleranceS, 0.1},
		{"throughput from", m.Parts.Throughput, ThroughputOverUnion},
		{"labels", m.Labels, map[string]string{"scenario": "s", "step": "getuser"}},
		{"flags", m.Flags, []string{record.FlagPartsApart}},
		{"latency count", m.LatencyHistogram().TotalCount(), int64(800)},
		{"latency_count", m.LatencyCount, int64(800)},
		{"parts' latency_count", []int64{m.Parts.Parts[0].LatencyCount, m.Parts.Parts[1].LatencyCount}, []int64{500, 300}},
	}
	for _, c := range checks {
		if !reflect.DeepEqual(c.got, c.want) {
			t.Errorf("%s = %v, want %v", c.name, c.got, c.want)
		}
	}
	// Series: summed second by second, t_s from the merged start, percentiles the parts' largest.
	want := []SeriesPoint{
		{TS: 1.5, Requests: 20, ThroughputRPS: 20, P50Ms: 1, P99Ms: 2, Inflight: 32},
		{TS: 2.5, Requests: 40, ThroughputRPS: 40, P50Ms: 1.5, P99Ms: 3, Inflight: 32},
	}
	if !reflect.DeepEqual(m.Series, want) {
		t.Errorf("series %+v, want %+v", m.Series, want)
	}
}

// TestMergeThroughputWindows: two parts of a 5-s step, 2,000 and 1,600 req/s on their own. Started
// as their tasks came up, 2.7 s apart, the union of their windows is 7.7 s and the total over it
// understates what they offered together by 35 %; the merge keeps that figure but flags it
// parts-apart, and shows a late part's lateness. Given one shared start, their windows coincide
// (a few milliseconds apart, within record.PartsApartFraction) and the throughput is the sum of their rates.
func TestMergeThroughputWindows(t *testing.T) {
	rng := rand.New(rand.NewPCG(9, 10))
	lat1, lat2 := uniform(rng, 10_000, 900, 1100), uniform(rng, 8_000, 900, 1100)
	part := func(name string, start float64, lat []int64, mutate func(*Result)) *Result {
		return syntheticPart(t, name, start, lat, func(r *Result) {
			r.Errors, r.ErrorsByCode, r.DurationS, r.EndUnix = 0, nil, 5, start+5
			r.ThroughputRPS = float64(r.Requests) / 5
			if mutate != nil {
				mutate(r)
			}
		})
	}
	const sumOfRates = 2000 + 1600
	cases := []struct {
		name            string
		start2          float64
		late            bool
		throughput      float64
		from            string
		flags           []string
		startSpread, at string
	}{
		// Before the shared start: part 2's task came up 2.7 s after part 1's.
		{"2.7 s apart (no shared start)", 1002.7, false, round3(18_000 / 7.7), ThroughputOverUnion, []string{record.FlagPartsApart}, "2.7", ""},
		// Given a shared start part 2 was ready 2.7 s late: it started at once, and said so.
		{"2.7 s apart (part 2 late for the shared start)", 1002.7, true, round3(18_000 / 7.7), ThroughputOverUnion,
			[]string{record.FlagLateStart, record.FlagPartsApart}, "2.7", "2026-11-28T10:00:00Z"},
		{"coincident (a shared start, 4 ms apart)", 1000.004, false, sumOfRates, ThroughputSumOfParts, []string{}, "0.004", "2026-11-28T10:00:00Z"},
		{"just within the tolerance (49 ms of 5 s)", 1000.049, false, sumOfRates, ThroughputSumOfParts, []string{}, "0.049", ""},
		{"just beyond it (51 ms of 5 s)", 1000.051, false, round3(18_000 / 5.051), ThroughputOverUnion, []string{record.FlagPartsApart}, "0.051", ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			shared := func(r *Result) { r.StartAt = c.at }
			p2 := func(r *Result) {
				shared(r)
				if c.late {
					r.StartLateS, r.Flags = 2.7, []string{record.FlagLateStart}
				}
			}
			m, err := Merge([]*Result{part("1", 1000, lat1, shared), part("2", c.start2, lat2, p2)})
			if err != nil {
				t.Fatal(err)
			}
			if m.Requests != 18_000 || m.ThroughputRPS != c.throughput || m.Parts.Throughput != c.from || !reflect.DeepEqual(m.Flags, c.flags) {
				t.Errorf("%d requests, %v req/s from %q, flags %v; want 18000, %v from %q, %v", m.Requests, m.ThroughputRPS, m.Parts.Throughput, m.Flags, c.throughput, c.from, c.flags)
			}
			if got := strconv.FormatFloat(m.Parts.StartSpreadS, 'f', -1, 64); got != c.startSpread || m.Parts.WindowToleranceS != 0.05 || m.Parts.StartAt != c.at {
				t.Errorf("start spread %s s, tolerance %v s, start_at %q; want %s, 0.05, %q", got, m.Parts.WindowToleranceS, m.Parts.StartAt, c.startSpread, c.at)
			}
			if c.late && m.Parts.Parts[1].StartLateS != 2.7 {
				t.Errorf("part 2's lateness %v s, want 2.7", m.Parts.Parts[1].StartLateS)
			}
			t.Logf("%s: %.0f req/s (%s), the parts' rates add up to %d: %+.1f %%", c.name, m.ThroughputRPS, m.Parts.Throughput, sumOfRates, 100*(m.ThroughputRPS/sumOfRates-1))
		})
	}
}

func TestMergeRefuses(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	good := func() *Result { return syntheticPart(t, "1", 1000, uniform(rng, 10, 900, 1100), nil) }
	cases := []struct {
		name   string
		mutate func(*Result)
		want   string
	}{
		{"other target", func(r *Result) { r.Target = "rest" }, `target "rest"`},
		{"other method", func(r *Result) { r.Method = "Echo" }, `method "Echo"`},
		{"other model", func(r *Result) { r.Model = "open" }, `model "open"`},
		{"no histogram", func(r *Result) { r.Histograms.Latency = "" }, "no latency histogram"},
		{"bad histogram", func(r *Result) { r.Histograms.ServiceTime = "not base64!" }, "histograms.service_time"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := Merge([]*Result{good(), syntheticPart(t, "2", 1000, uniform(rng, 10, 900, 1100), c.mutate)})
			if err == nil || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), "part 2") {
				t.Errorf("Merge = %v, want an error about part 2 naming %q", err, c.want)
			}
		})
	}
	if _, err := Merge(nil); err == nil {
		t.Error("Merge(nil) succeeded")
	}
}

// TestMergeFlagsAndErrors: errors and failed are decided on the totals, a part's own error is
// kept with its part named, and rate-not-met of any part stays.
func TestMergeFlagsAndErrors(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	parts := []*Result{
		syntheticPart(t, "1", 1000, uniform(rng, 1000, 900, 1100), func(r *Result) { r.Flags = []string{record.FlagRateNotMet} }),
		syntheticPart(t, "2", 1000, nil, func(r *Result) {
			r.Requests, r.Errors, r.Flags, r.Error = 0, 0, []string{record.FlagFailed}, "cannot connect to grpc:50051"
			r.ErrorsByCode = nil
		}),
	}
	m, err := Merge(parts)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(m.Flags, []string{record.FlagRateNotMet}) {
		t.Errorf("flags %v, want only rate-not-met (3 errors in 1000 is under 1 %%, and requests completed)", m.Flags)
	}
	if m.Error != "part 2: cannot connect to grpc:50051" {
		t.Errorf("error %q", m.Error)
	}
}

// TestMergeTimeseries: warm-up points align on the window's start, measured points on the first
// second, and t_s counts from the merged start.
func TestMergeTimeseries(t *testing.T) {
	pt := func(ts float64, warm bool, reqs int64, p99 float64) record.TimeseriesPoint {
		return record.TimeseriesPoint{TS: ts, SpanS: 1, Warmup: warm, Requests: reqs, ThroughputRPS: float64(reqs),
			LatencyMs: record.PointLatency{P50: p99 / 2, P99: p99, Max: p99 * 2}, Inflight: 4}
	}
	a := &record.Timeseries{Version: 1, Target: "grpc", Tool: "protobench", Method: "GetUser", Model: "closed", StartUnix: 100, EndUnix: 102, IntervalS: 1,
		Points: []record.TimeseriesPoint{pt(-1, true, 5, 1), pt(0, true, 6, 1), pt(1, false, 10, 2), pt(2, false, 10, 3)}}
	// b started its warm-up a second later, so it has one warm-up point less, and its window 0.25 s later.
	b := &record.Timeseries{Version: 1, Target: "grpc", Tool: "protobench", Method: "GetUser", Model: "closed", StartUnix: 100.25, EndUnix: 102.25, IntervalS: 1,
		Points: []record.TimeseriesPoint{pt(0, true, 7, 5), pt(1, false, 20, 1), pt(2, false, 20, 1)}}
	m, err := MergeTimeseries([]*record.Timeseries{a, b})
	if err != nil {
		t.Fatal(err)
	}
	want := []record.TimeseriesPoint{
		pt(-1, true, 5, 1),
		{TS: 0.25, SpanS: 1, Warmup: true, Requests: 13, ThroughputRPS: 13, LatencyMs: record.PointLatency{P50: 2.5, P99: 5, Max: 10}, Inflight: 8},
		{TS: 1.25, SpanS: 1, Requests: 30, ThroughputRPS: 30, LatencyMs: record.PointLatency{P50: 1, P99: 2, Max: 4}, Inflight: 8},
		{TS: 2.25, SpanS: 1, Requests: 30, ThroughputRPS: 30, LatencyMs: record.PointLatency{P50: 1.5, P99: 3, Max: 6}, Inflight: 8},
	}
	if !reflect.DeepEqual(m.Points, want) {
		t.Errorf("points\n got %+v\nwant %+v", m.Points, want)
	}
	if m.StartUnix != 100 || m.EndUnix != 102.25 {
		t.Errorf("window %v–%v, want 100–102.25", m.StartUnix, m.EndUnix)
	}
	var buf bytes.Buffer
	if err := json.NewEncoder(&buf).Encode(m); err != nil {
		t.Fatal(err)
	}
	if _, err := record.DecodeTimeseries(&buf); err != nil {
		t.Errorf("the merged timeline does not read back: %v", err)
	}
	b.Method = "Echo"
	if _, err := MergeTimeseries([]*record.Timeseries{a, b}); err == nil || !strings.Contains(err.Error(), "method") {
		t.Errorf("MergeTimeseries of different methods = %v, want a refusal", err)
	}
}

// TestMergeInProcess: results straight from Run (histograms in memory) merge like results read
// from JSON.
func TestMergeInProcess(t *testing.T) {
	mk := func(vals ...int64) *Result {
		h := NewHistogram()
		for _, v := range vals {
			_ = h.RecordValue(v)
		}
		return &Result{Record: record.Record{Tool: "protobench", Target: "grpc", Method: "Echo", Model: "closed",
			Requests: int64(len(vals)), StartUnix: 1, EndUnix: 2}, latency: h, service: h}
	}
	m, err := Merge([]*Result{mk(100, 200), mk(300)})
	if err != nil {
		t.Fatal(err)
	}
	if got := m.LatencyHistogram(); got.TotalCount() != 3 || got.Max() != mk(300).latency.Max() {
		t.Errorf("merged histogram: %d values, max %d", got.TotalCount(), got.Max())
	}
}
