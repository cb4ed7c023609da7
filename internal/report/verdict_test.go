package report

import (
	"strings"
	"testing"

	"github.com/protobench/protobench/internal/record"
	"github.com/protobench/protobench/internal/results"
	"github.com/protobench/protobench/internal/scenario"
)

const verdictScenario = `name: verdicts
description: a plain figure and a gain
published:
  hardware: {description: a big machine, cores: 32}
  method: Locust
  figures:
    - {name: qps, measures: requests per second, value: 1000, unit: req/s, metric: throughput_rps, step: plain, target: python-grpc}
    - {name: connection-reuse, measures: QPS gain from reuse, value: 18, unit: "%", metric: throughput_gain_percent,
       step: reuse, target: python-grpc, match: {requests_per_connection: forever}, versus: {requests_per_connection: 1}}
    - {name: cited, measures: a figure we do not measure, value: 3, unit: ms}
steps:
  - name: plain
    targets: [python-grpc]
    method: Echo
    connections: 10
  - name: reuse
    targets: [python-grpc]
    method: Echo
    connections: 1000
    matrix:
      requests_per_connection: [1, forever]
`

// The published table's verdicts come from results.Judge on the summary's intervals: the
// median's, which at three repeats covers 75 % and gives no verdict, at six 96.9 % and does;
// the gain's paired t, which claims 95 % at any n.
func TestPublishedTableVerdicts(t *testing.T) {
	sc, err := scenario.Parse("verdicts.yaml", []byte(verdictScenario))
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		repeats     int
		qps, reuse  string
		cited, gain string
	}{
		{3, "no verdict: our interval of the median ([min,max], 75.0 % at n=3) covers less than the 95 % a verdict needs; the published value lies outside it",
			"consistent: the published value is inside our interval of the gain (paired t on logs, 95.0 % at n=3 pairs)", "not measured here", "+19.7 %"},
		{6, "ours higher: the published value is outside our interval of the median ([min,max], 96.9 % at n=6)",
			"consistent: the published value is inside our interval of the gain (paired t on logs, 95.0 % at n=6 pairs)", "not measured here", "+19.7 %"},
		{1, "no verdict: one repeat, no interval (ours is higher)", "no verdict: one repeat, no interval (ours is higher)", "not measured here", "+20 %"},
	} {
		plan, err := sc.Plan(scenario.PlanOptions{Cores: 2, Repeat: c.repeats})
		if err != nil {
			t.Fatal(err)
		}
		var recs []record.Record
		for _, run := range plan.Runs {
			r := results.FromRun(plan, run)
			r.Requests = 1000
			r.LatencyMs = record.Latency{Mean: 1, P99: 2}
			switch {
			case run.Step == "plain":
				r.ThroughputRPS = 1050 + 50*float64(run.Repeat) // 1100, 1150, …: all above 1000
			case strings.HasSuffix(run.Step, "forever"):
				r.ThroughputRPS = []float64{1200, 1300, 1100}[(run.Repeat-1)%3]
			default:
				r.ThroughputRPS = 1000
			}
			recs = append(recs, r)
		}
		f := &Folder{Plan: plan, Records: recs, Summary: results.Summarize(plan, recs)}
		var p page
		publishedTable(f, &p)
		if len(p.Published) != 3 {
			t.Fatalf("%d repeats: rows %+v", c.repeats, p.Published)
		}
		for i, want := range []string{c.qps, c.reuse, c.cited} {
			if got := p.Published[i].Verdict; got != want {
				t.Errorf("%d repeats, %s: verdict %q, want %q", c.repeats, p.Published[i].Name, got, want)
			}
		}
		if !strings.HasPrefix(p.Published[1].Ours, c.gain) {
			t.Errorf("%d repeats: our gain %q, want %s", c.repeats, p.Published[1].Ours, c.gain)
		}
	}
}
