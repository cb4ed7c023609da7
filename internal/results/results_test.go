package results

import (
	"bytes"
	"encoding/csv"
	"encoding/json"
	"fmt"
	"github.com/protobench/protobench/internal/stats"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/protobench/protobench/internal/record"
	"github.com/protobench/protobench/internal/scenario"
)

func TestApplyFlags(t *testing.T) {
	cases := []struct {
		name string
		in   record.Record
		want []string
	}{
		{"clean", record.Record{Requests: 1000, Errors: 10, ThroughputRPS: 100}, []string{}},
		{"errors above 1 %", record.Record{Requests: 1000, Errors: 11}, []string{record.FlagErrors}},
		{"errors without successes", record.Record{Requests: 0, Errors: 3}, []string{record.FlagErrors}},
		{"rate not met", record.Record{Model: "open", Rate: 1000, ThroughputRPS: 949}, []string{record.FlagRateNotMet}},
		{"rate met", record.Record{Model: "open", Rate: 1000, ThroughputRPS: 960}, []string{}},
		{"closed has no rate", record.Record{Model: "closed", ThroughputRPS: 1}, []string{}},
		{"runner flags kept, stale ones recomputed", record.Record{Requests: 100, Flags: []string{record.FlagNoisy, record.FlagThrottled, record.FlagErrors, record.FlagClientBound}},
			[]string{record.FlagClientBound, record.FlagThrottled}},
		{"failed is left alone", record.Record{Error: "timeout", Errors: 5, Flags: []string{record.FlagFailed}}, []string{record.FlagFailed}},
		{"others on the tool's cores at the threshold", record.Record{Requests: 100, ClientCores: &record.CoreTime{OthersPercent: pct(BusyHostPercent)}, ServerCores: &record.CoreTime{OthersPercent: pct(0)}},
			[]string{record.FlagBusyHost}},
		{"others on the server's cores", record.Record{Requests: 100, ServerCores: &record.CoreTime{OthersPercent: pct(42)}}, []string{record.FlagBusyHost}},
		{"others below the threshold", record.Record{Requests: 100, ServerCores: &record.CoreTime{OthersPercent: pct(BusyHostPercent - 0.1)}, ClientCores: &record.CoreTime{OthersPercent: pct(3)}}, []string{}},
		{"others unknown", record.Record{Requests: 100, ServerCores: &record.CoreTime{IdlePercent: 50}}, []string{}},
		{"a stale busy-host is recomputed", record.Record{Requests: 100, Flags: []string{record.FlagBusyHost}}, []string{}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			recs := []record.Record{tc.in}
			ApplyFlags(recs)
			got := recs[0].Flags
			if got == nil {
				got = []string{}
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("flags = %v, want %v", got, tc.want)
			}
		})
	}
}

// TestApplyFlagsNoisy: CV of 80/100/120 is 20/100 = 0.20 (noisy); of 90/100/110 it is exactly
// 0.10, which is not above the limit. A failed repeat does not count.
func TestApplyFlagsNoisy(t *testing.T) {
	var recs []record.Record
	for _, x := range []float64{80, 100, 120} {
		recs = append(recs, record.Record{Step: "a", Target: "grpc", Tool: "protobench", ThroughputRPS: x})
	}
	for _, x := range []float64{90, 100, 110} {
		recs = append(recs, record.Record{Step: "a", Target: "rest", Tool: "protobench", ThroughputRPS: x})
	}
	recs = append(recs, record.Record{Step: "a", Target: "rest", Tool: "protobench", Error: "boom", Flags: []string{record.FlagFailed}})
	ApplyFlags(recs)
	ApplyFlags(recs) // idempotent
	for i, r := range recs {
		want := r.Target == "grpc"
		if r.HasFlag(record.FlagNoisy) != want {
			t.Errorf("record %d (%s %v): noisy = %v, want %v (flags %v)", i, r.Target, r.ThroughputRPS, !want, want, r.Flags)
		}
		if strings.Count(strings.Join(r.Flags, ","), record.FlagNoisy) > 1 {
			t.Errorf("record %d: noisy twice: %v", i, r.Flags)
		}
	}
}

const testScenario = `name: demo
description: a test scenario
source: 003_test.txt
published:
  title: The article
  hardware:
    description: eight cores somewhere
    cores: 8
  method: wrk closed loop
  differences:
    - their client and server were apart
  figures:
    - {name: grpc-qps, measures: gRPC req/s, value: 12150, unit: req/s, metric: throughput_rps, step: getuser, target: grpc}
    - {name: grpc-mean, measures: gRPC mean latency, value: 8.2, unit: ms, metric: latency_mean_ms, step: getuser, target: grpc}
    - {name: grpc-mem, measures: memory, value: 1.2, unit: GB, metric: server_mem_max_bytes, step: getuser, target: grpc}
    - {name: best, measures: best of the sweep, value: 1000, unit: req/s, metric: throughput_rps, step: sweep, target: grpc, at: max}
    - {name: knee, measures: knee of the sweep, value: 150, unit: req/s, metric: throughput_rps, step: sweep, target: grpc, at: knee}
    - {name: mid, measures: middle point, value: 100, unit: req/s, metric: throughput_rps, step: sweep, target: grpc, match: {concurrency: 2}}
    - {name: cited, measures: a figure we only cite, value: 27, unit: "%"}
steps:
  - name: getuser
    targets: [grpc, rest]
    tools: [protobench, ghz]
    method: GetUser
    connections: 100
    baseline: rest
  - name: sweep
    targets: [grpc]
    method: Echo
    knee_p99_ms: 10
    matrix:
      concurrency: [1, 2, 3]
`

func testPlan(t *testing.T) *scenario.Plan {
	t.Helper()
	sc, err := scenario.Parse("demo.yaml", []byte(testScenario))
	if err != nil {
		t.Fatal(err)
	}
	plan, err := sc.Plan(scenario.PlanOptions{Cores: 2, Repeat: 5})
	if err != nil {
		t.Fatal(err)
	}
	return plan
}

// testRecords fills each run of the plan with known numbers:
//   - getuser grpc/protobench: throughput 100..140 (median 120, 95 % CI [100, 140], see stats),
//     p99 5 ms, mean 4 ms, memory 1.5e9 bytes;
//   - getuser rest/protobench: throughput 60 every time, p99 10 ms;
//   - getuser grpc/ghz: throughput 90 every time, p99 6 ms;
//   - sweep c1/c2/c3: throughput 100/200/300, p99 1/5/20 ms.
func testRecords(plan *scenario.Plan) []record.Record {
	var recs []record.Record
	for _, run := range plan.Runs {
		r := FromRun(plan, run)
		r.Requests = 1000
		switch {
		case run.Step == "getuser" && run.Target == "grpc" && run.Tool == "protobench":
			r.ThroughputRPS = float64(90 + 10*run.Repeat)
			r.LatencyMs = record.Latency{Mean: 4, P50: 3, P99: 5}
			r.ServerMemMaxBytes = 1.5e9
			r.ServerCPUPercentOfCap = 80
		case run.Step == "getuser" && run.Target == "rest":
			r.ThroughputRPS, r.LatencyMs = 60, record.Latency{Mean: 8, P99: 10}
		case run.Step == "getuser" && run.Tool == "ghz":
			r.ThroughputRPS, r.LatencyMs = 90, record.Latency{Mean: 5, P99: 6}
		default:
			r.ThroughputRPS = float64(100 * run.Concurrency)
			r.LatencyMs = record.Latency{P99: []float64{0, 1, 5, 20}[run.Concurrency]}
		}
		recs = append(recs, r)
	}
	return recs
}

func TestSummarize(t *testing.T) {
	plan := testPlan(t)
	s := Summarize(plan, testRecords(plan))

	var names []string
	for _, g := range s.Groups {
		names = append(names, g.Step+"/"+g.Target+"/"+g.Tool)
	}
	wantNames := []string{"getuser/grpc/protobench", "getuser/grpc/ghz", "getuser/rest/protobench", "sweep-c1/grpc/protobench", "sweep-c2/grpc/protobench", "sweep-c3/grpc/protobench"}
	if !reflect.DeepEqual(names, wantNames) {
		t.Fatalf("groups = %v, want %v", names, wantNames)
	}
	g := s.Groups[0]
	if g.Throughput.N != 5 || g.Throughput.Median != 120 || g.Throughput.CI.Lo != 100 || g.Throughput.CI.Hi != 140 {
		t.Errorf("grpc throughput = %+v", g.Throughput)
	}
	if g.ServerCPUs != 1 || g.BaseStep != "getuser" || g.MeanMs != 4 {
		t.Errorf("grpc group = %+v", g)
	}

	// Ratios: getuser/protobench grpc (100…140) over rest (60 each repeat): the ratio of geometric
	// means, with a t interval on the logs on 4 degrees of freedom (rest has no spread), and the
	// paired ratio is the same here because rest's runs are all alike; p99 5/10.
	var ratio *RatioRow
	for i, r := range s.Ratios {
		if r.Step == "getuser" && r.Tool == "protobench" {
			ratio = &s.Ratios[i]
		}
	}
	if ratio == nil || ratio.Target != "grpc" || ratio.Baseline != "rest" {
		t.Fatalf("ratios = %+v", s.Ratios)
	}
	var logs []float64
	for _, x := range []float64{100, 110, 120, 130, 140} {
		logs = append(logs, math.Log(x/60))
	}
	mean, sd := stats.Mean(logs), stats.StdDev(logs)
	half := stats.TQuantile(0.975, 4) * sd / math.Sqrt(5)
	wantR, wantLo, wantHi := math.Exp(mean), math.Exp(mean-half), math.Exp(mean+half)
	closeTo := func(a, b float64) bool { return math.Abs(a-b) < 1e-9 }
	if !closeTo(ratio.Throughput, wantR) || !closeTo(ratio.ThroughputCI.Lo, wantLo) || !closeTo(ratio.ThroughputCI.Hi, wantHi) || ratio.ThroughputCI.Method != stats.MethodWelchLog {
		t.Errorf("throughput ratio = %v %+v, want %v [%v, %v]", ratio.Throughput, ratio.ThroughputCI, wantR, wantLo, wantHi)
	}
	if ratio.Pairs != 5 || !closeTo(ratio.ThroughputPaired, wantR) || !closeTo(ratio.ThroughputPairedCI.Lo, wantLo) || ratio.ThroughputPairedCI.Method != stats.MethodPairedLog {
		t.Errorf("paired throughput ratio = %v %+v over %d pairs", ratio.ThroughputPaired, ratio.ThroughputPairedCI, ratio.Pairs)
	}
	if !closeTo(ratio.P99, 0.5) || !closeTo(ratio.P99CI.Lo, 0.5) || !closeTo(ratio.P99CI.Hi, 0.5) {
		t.Errorf("p99 ratio = %v %+v", ratio.P99, ratio.P99CI)
	}

	// Knee: p99 under 10 ms holds for c1 (1 ms) and c2 (5 ms); c2 has the higher throughput.
	if len(s.Knees) != 1 || s.Knees[0].Group == nil || s.Knees[0].Group.Step != "sweep-c2" {
		t.Errorf("knees = %+v", s.Knees)
	}

	// Agreement: ghz 90 vs protobench 120 on the same workload = 0.75; p99 6/5 = 1.2.
	if len(s.Agreement) != 1 || s.Agreement[0].Tool.Tool != "ghz" || s.Agreement[0].Throughput != 0.75 || math.Abs(s.Agreement[0].P99-1.2) > 1e-12 {
		t.Errorf("agreement = %+v", s.Agreement)
	}

	want := map[string]struct {
		step                string
		ours, ratio         float64
		theirsPC, oursPerCo float64
	}{
		// 12150 req/s on 8 cores = 1518.75 per core; ours 120 on a 1-cpu cap.
		"grpc-qps":  {"getuser", 120, 120.0 / 12150, 12150.0 / 8, 120},
		"grpc-mean": {"getuser", 4, 4 / 8.2, math.NaN(), math.NaN()},
		"grpc-mem":  {"getuser", 1.5, 1.25, math.NaN(), math.NaN()}, // 1.5e9 bytes in GB
		"best":      {"sweep-c3", 300, 0.3, 125, 300},
		"knee":      {"sweep-c2", 200, 200.0 / 150, 150.0 / 8, 200},
		"mid":       {"sweep-c2", 200, 2, 100.0 / 8, 200},
	}
	seen := 0
	for _, r := range s.Published {
		w, ok := want[r.Figure.Name]
		if !ok {
			if r.Figure.Name != "cited" || r.Group != nil || !math.IsNaN(r.Ours) {
				t.Errorf("unexpected row %+v", r)
			}
			continue
		}
		seen++
		if r.Group == nil || r.Group.Step != w.step || !near(r.Ours, w.ours) || !near(r.Ratio, w.ratio) ||
			!near(r.TheirsPerCore, w.theirsPC) || !near(r.OursPerCore, w.oursPerCo) {
			t.Errorf("%s: got step %v ours %v ratio %v per core %v/%v; want %+v", r.Figure.Name, stepName(r.Group), r.Ours, r.Ratio, r.TheirsPerCore, r.OursPerCore, w)
		}
	}
	if seen != len(want) {
		t.Errorf("saw %d compared figures, want %d", seen, len(want))
	}
}

func near(a, b float64) bool {
	if math.IsNaN(a) || math.IsNaN(b) {
		return math.IsNaN(a) && math.IsNaN(b)
	}
	return math.Abs(a-b) <= 1e-9*math.Max(1, math.Abs(b))
}

func stepName(g *Group) string {
	if g == nil {
		return "<nil>"
	}
	return g.Step
}

func TestWriteAll(t *testing.T) {
	plan := testPlan(t)
	recs := testRecords(plan)
	recs[0].ServiceTimeMs = &record.Latency{Mean: 1, P99: 2.5}
	recs[1].Flags = []string{record.FlagClientBound}
	// A step two client nodes shared: its parts and the merged histogram's count.
	recs[2].LatencyCount = 300
	recs[2].ClientParts = []record.ClientPart{{Part: 1, Node: "alpha", Requests: 100, LatencyCount: 100, ThroughputRPS: 20},
		{Part: 2, Node: "beta", Requests: 200, LatencyCount: 200, ThroughputRPS: 40}}
	dir := filepath.Join(t.TempDir(), "out")
	run := map[string]any{"scenario_hash": plan.Scenario.Hash(), "cores": 2}
	if err := WriteAll(dir, run, plan, recs); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{RunFile, JSONFile, CSVFile, SummaryFile, ScenarioFile} {
		if _, err := os.Stat(filepath.Join(dir, f)); err != nil {
			t.Errorf("%s missing: %v", f, err)
		}
	}
	if raw, _ := os.ReadFile(filepath.Join(dir, ScenarioFile)); !bytes.Equal(raw, plan.Scenario.Raw) {
		t.Error("scenario.yaml is not the scenario's bytes")
	}

	back, err := Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(back) != len(recs) || back[0].ServiceTimeMs == nil || back[0].ServiceTimeMs.P99 != 2.5 || back[5].Flags == nil {
		t.Errorf("results.json round trip lost data: %+v", back[0])
	}
	if !back[1].HasFlag(record.FlagClientBound) {
		t.Errorf("runner flag lost: %v", back[1].Flags)
	}
	if !reflect.DeepEqual(back[2].ClientParts, recs[2].ClientParts) || back[2].LatencyCount != 300 {
		t.Errorf("results.json round trip lost the parts: %+v, %d latencies", back[2].ClientParts, back[2].LatencyCount)
	}

	f, err := os.Open(filepath.Join(dir, CSVFile))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	rows, err := csv.NewReader(f).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != len(recs)+1 {
		t.Fatalf("%d CSV rows, want %d", len(rows), len(recs)+1)
	}
	col := map[string]int{}
	for i, h := range rows[0] {
		col[h] = i
	}
	for _, h := range []string{"scenario", "step", "repeat", "target", "tool", "throughput_rps", "latency_ms.mean", "latency_ms.p99", "latency_ms.p999",
		"service_time_ms.p99", "server_cpu_seconds", "server_cpu_percent_of_cap", "server_mem_max_bytes", "cpu_us_per_request", "server_cores.softirq_percent", "client_cores.idle_percent", "flags",
		"latency_count", "client_parts"} {
		if _, ok := col[h]; !ok {
			t.Errorf("CSV lacks column %s (has %v)", h, rows[0])
		}
	}
	if got := rows[1][col["service_time_ms.p99"]]; got != "2.5" {
		t.Errorf("service_time_ms.p99 = %q", got)
	}
	if got := rows[2][col["service_time_ms.p99"]]; got != "" {
		t.Errorf("missing service time should be empty, got %q", got)
	}
	if got := rows[1][col["throughput_rps"]]; got != "100" {
		t.Errorf("throughput_rps = %q", got)
	}
	if got, want := rows[3][col["client_parts"]], "part 1 on alpha: 100 requests, 100 latencies, 20 req/s;part 2 on beta: 200 requests, 200 latencies, 40 req/s"; got != want {
		t.Errorf("client_parts = %q, want %q", got, want)
	}

	summary, _ := os.ReadFile(filepath.Join(dir, SummaryFile))
	for _, want := range []string{
		"# demo",
		"| getuser | grpc | protobench | GetUser 100×1 closed loop | 5 | 120 (100–140) | [min,max], 93.8 % at n=5 |",
		"| getuser | protobench | grpc / rest | 1.99× (1.68–2.34; paired t on logs, 95.0 % at n=5 pairs) | 1.99× (1.68–2.34; Welch t on logs, 95.0 % at n=5+5) |",
		"## The answer",
		"- **Throughput, grpc / rest** ([getuser](#ratios)): 1.99× (1.68–2.34; paired t on logs, 95.0 % at n=5 pairs) paired",
		"Rests on flagged runs: noisy 5/10.",
		"- **Latency at equal load** ([table](#latency-at-equal-load)): not in this run",
		"| sweep | grpc | protobench | 10 | sweep-c2 |",
		"| grpc-qps | gRPC req/s | 12,150 req/s | 120 req/s | 0.00988× | 1,519 req/s (8 cores) | 120 req/s (1 cpu) | getuser (protobench) |",
		"| grpc-mem | memory | 1.2 GB | 1.5 GB | 1.25× |",
		"| cited | a figure we only cite | 27 % | not measured |",
		"- their client and server were apart",
		"`client-bound`",
		"| grpc | GetUser 100×1 closed loop | ghz (ref protobench) | 90 | 0.750× |",
	} {
		if !strings.Contains(string(summary), want) {
			t.Errorf("summary.md lacks %q\n%s", want, summary)
		}
	}
}

func TestTable(t *testing.T) {
	plan := testPlan(t)
	var buf bytes.Buffer
	if err := Table(&buf, testRecords(plan), plan); err != nil {
		t.Fatal(err)
	}
	out := buf.String()
	for _, want := range []string{"STEP", "getuser", "120 (100–140)", "grpc/rest", "throughput 1.99× (1.68–2.34; paired t on logs, 95.0 % at n=5 pairs)", "[min,max], 93.8 % at n=5", "sweep-c2", "grpc-qps", "published 12,150 req/s", "ours 120 req/s"} {
		if !strings.Contains(out, want) {
			t.Errorf("table lacks %q:\n%s", want, out)
		}
	}
}

// TestSummaryWithoutPlan: records alone (e.g. `protobench report` on a folder without its
// scenario) still summarise, with no published section.
func TestSummaryWithoutPlan(t *testing.T) {
	recs := []record.Record{
		{Scenario: "x", Step: "a", Target: "grpc", Tool: "protobench", ThroughputRPS: 10, Repeat: 1},
		{Scenario: "x", Step: "a", Target: "grpc", Tool: "protobench", ThroughputRPS: 20, Repeat: 2},
		{Scenario: "x", Step: "a", Target: "rest", Tool: "protobench", Error: "refused", Flags: []string{record.FlagFailed}, Repeat: 1},
	}
	var buf bytes.Buffer
	if err := WriteSummary(&buf, nil, recs); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"# x", "| a | grpc | protobench |", "| 2 | 15 (10–20) |", "0 (+1 failed)", "`noisy`", "`failed`"} {
		if !strings.Contains(buf.String(), want) {
			t.Errorf("summary lacks %q:\n%s", want, buf.String())
		}
	}
}

func TestFormat(t *testing.T) {
	cases := []struct {
		in   float64
		want string
	}{
		{12150, "12,150"}, {1518.75, "1,519"}, {1234567, "1,234,567"}, {120, "120"}, {8.234, "8.23"},
		{0.8, "0.8"}, {0.8234, "0.823"}, {90, "90"}, {10.5, "10.5"}, {0, "0"}, {math.NaN(), "n/a"}, {-2500, "-2,500"},
	}
	for _, tc := range cases {
		if got := fmtNum(tc.in); got != tc.want {
			t.Errorf("fmtNum(%v) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

func TestWriteFileAtomicNeverWritesThroughSymlinks(t *testing.T) {
	dir := t.TempDir()
	victim := filepath.Join(t.TempDir(), "victim")
	if err := os.WriteFile(victim, []byte("keep"), 0o600); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "results.json")
	if err := os.Symlink(victim, path); err != nil {
		t.Fatal(err)
	}
	if err := WriteFileAtomic(path, []byte("new")); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(victim); string(b) != "keep" {
		t.Fatalf("the symlink's target was written: %q", b)
	}
	st, err := os.Lstat(path)
	if err != nil || st.Mode()&os.ModeSymlink != 0 || st.Mode().Perm() != 0o644 {
		t.Fatalf("results.json is %v (%v), want a regular 0644 file", st.Mode(), err)
	}
	linkDir := filepath.Join(t.TempDir(), "linked")
	if err := os.Symlink(dir, linkDir); err != nil {
		t.Fatal(err)
	}
	if err := WriteFileAtomic(filepath.Join(linkDir, "x"), []byte("x")); err == nil {
		t.Fatal("writing into a symlinked folder was allowed")
	}
	left, _ := filepath.Glob(filepath.Join(dir, ".*tmp"))
	if len(left) != 0 {
		t.Fatalf("temporary files left: %v", left)
	}
}

func TestMissingFiguresAreNullNotZero(t *testing.T) {
	failed := record.Record{Step: `a "server_cpu_seconds":1`, Error: "start grpc: boom", Flags: []string{record.FlagFailed}}
	measured := record.Record{Step: "b", ThroughputRPS: 10, Requests: 50, ServerCPUSeconds: 1.5, ServerMemMaxBytes: 1 << 20,
		ServerThrottledSeconds: 0, ClientCPUPercentOfCap: 40, CPUMicrosPerRequest: 3}
	var buf bytes.Buffer
	if err := WriteJSON(&buf, []record.Record{failed, measured}); err != nil {
		t.Fatal(err)
	}
	var raw []map[string]any
	if err := json.Unmarshal(buf.Bytes(), &raw); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"server_cpu_seconds", "throughput_rps", "latency_ms", "client_cpu_percent_of_cap"} {
		if v, ok := raw[0][k]; !ok || v != nil {
			t.Errorf("failed record: %s = %v, want null", k, v)
		}
	}
	if raw[0]["requests"] != float64(0) || raw[0]["step"] != failed.Step {
		t.Errorf("failed record: requests %v step %v", raw[0]["requests"], raw[0]["step"])
	}
	if raw[1]["server_throttled_seconds"] != float64(0) || raw[1]["server_cpu_seconds"] != 1.5 {
		t.Errorf("measured record lost a figure: %v", raw[1])
	}
	back, err := func() ([]record.Record, error) {
		var recs []record.Record
		return recs, json.Unmarshal(buf.Bytes(), &recs)
	}()
	if err != nil || len(back) != 2 || back[1].ServerCPUSeconds != 1.5 {
		t.Fatalf("results.json does not read back: %v %+v", err, back)
	}
	buf.Reset()
	if err := WriteCSV(&buf, []record.Record{failed}); err != nil {
		t.Fatal(err)
	}
	rows, err := csv.NewReader(&buf).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	for i, h := range rows[0] {
		if h == "server_cpu_seconds" || h == "latency_ms.p99" {
			if rows[1][i] != "" {
				t.Errorf("csv %s = %q, want empty", h, rows[1][i])
			}
		}
	}
}

// TestShuffledPlanKeepsOrder: a plan shuffled by its seed gives the same groups in the same order
// and the same ratios (the same baseline) as the scenario's own order.
func TestShuffledPlanKeepsOrder(t *testing.T) {
	plan := testPlan(t)
	want := Summarize(plan, testRecords(plan))
	for seed := uint64(1); seed <= 20; seed++ {
		shuffled, err := plan.Scenario.Plan(scenario.PlanOptions{Cores: 2, Repeat: 5, Seed: seed})
		if err != nil {
			t.Fatal(err)
		}
		got := Summarize(shuffled, testRecords(shuffled))
		for i := range want.Groups {
			if got.Groups[i].Step != want.Groups[i].Step || got.Groups[i].Target != want.Groups[i].Target || got.Groups[i].Tool != want.Groups[i].Tool {
				t.Fatalf("seed %d: group %d is %s/%s/%s, want %s/%s/%s", seed, i, got.Groups[i].Step, got.Groups[i].Target, got.Groups[i].Tool,
					want.Groups[i].Step, want.Groups[i].Target, want.Groups[i].Tool)
			}
		}
		for i := range want.Ratios {
			if got.Ratios[i].Target != want.Ratios[i].Target || got.Ratios[i].Baseline != want.Ratios[i].Baseline {
				t.Fatalf("seed %d: ratio %s/%s, want %s/%s", seed, got.Ratios[i].Target, got.Ratios[i].Baseline, want.Ratios[i].Target, want.Ratios[i].Baseline)
			}
		}
	}
}

// TestEqualLoad: open-model runs of the headline's two targets at the same offered rate become
// the latency-at-equal-load table and the answer's latency line, lowest rate first.
func TestEqualLoad(t *testing.T) {
	var recs []record.Record
	for rep := 1; rep <= 3; rep++ {
		for _, target := range []string{"grpc", "rest"} {
			slow := map[string]float64{"grpc": 1, "rest": 2}[target]
			recs = append(recs, record.Record{Scenario: "x", Step: "closed", Target: target, Tool: PrimaryTool, Model: "closed", Repeat: rep,
				ThroughputRPS: 1000 / slow, Requests: 1000, LatencyMs: record.Latency{P50: slow, P99: 2 * slow, P999: 3 * slow}})
			for _, rate := range []float64{500, 250} {
				step := fmt.Sprintf("open-%g", rate)
				recs = append(recs, record.Record{Scenario: "x", Step: step, Target: target, Tool: PrimaryTool, Model: "open", Rate: rate, Repeat: rep,
					ThroughputRPS: rate, Requests: 1000, LatencyMs: record.Latency{P50: slow * rate / 250, P99: 4 * slow * rate / 250, P999: 8 * slow * rate / 250}})
			}
		}
	}
	var b bytes.Buffer
	if err := WriteSummary(&b, nil, recs); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	for _, want := range []string{
		"- **Latency at equal load** ([table](#latency-at-equal-load)): at 250/s p99 rest / grpc 2.00× (2.00–2.00; paired t on logs, 95.0 % at n=3 pairs) (medians 8 ms and 4 ms); at 500/s p99 rest / grpc 2.00× (2.00–2.00; paired t on logs, 95.0 % at n=3 pairs) (medians 16 ms and 8 ms)",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("summary lacks %q:\n%s", want, out)
		}
	}
	if strings.Index(out, "at 250/s") > strings.Index(out, "at 500/s") {
		t.Error("rates not in ascending order")
	}
}

func pct(v float64) *float64 { return &v }

func TestBusyHostLine(t *testing.T) {
	quiet := record.Record{Requests: 1, ServerCores: &record.CoreTime{OthersPercent: pct(2)}}
	busy := record.Record{Requests: 1, ClientCores: &record.CoreTime{OthersPercent: pct(47.5)}}
	if got := BusyHostLine([]record.Record{quiet, quiet}); got != "" {
		t.Errorf("quiet runs: %q", got)
	}
	got := BusyHostLine([]record.Record{quiet, busy, {Error: "x", ClientCores: busy.ClientCores}})
	if !strings.HasPrefix(got, "1 of 2 runs are busy-host") || !strings.Contains(got, "up to 48 %") {
		t.Errorf("BusyHostLine = %q", got)
	}
}

// TestWhyOnlyWhenItHolds: the answer's CPU sentence says throughput follows the inverse of the
// CPU per request only when neither target's runs were unsaturated or client-bound; otherwise it
// names the runs that break the condition.
func TestWhyOnlyWhenItHolds(t *testing.T) {
	full := &Group{Target: "grpc"}
	idle := &Group{Target: "rest", Flags: []FlagCount{{record.FlagUnsaturated, 2}}}
	bound := &Group{Target: "rest", Flags: []FlagCount{{record.FlagClientBound, 1}}}
	if got := cpuReading(full, &Group{Target: "rest"}); !strings.Contains(got, "throughput follows its inverse") {
		t.Errorf("both full: %q", got)
	}
	for _, g := range []*Group{idle, bound} {
		got := cpuReading(full, g)
		if strings.Contains(got, "follows its inverse.") || !strings.Contains(got, g.Flags[0].Flag+" runs of rest") {
			t.Errorf("%s: %q", g.Flags[0].Flag, got)
		}
	}
}
