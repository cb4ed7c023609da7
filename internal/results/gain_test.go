package results

import (
	"bytes"
	"math"
	"strings"
	"testing"

	"github.com/protobench/protobench/internal/record"
	"github.com/protobench/protobench/internal/scenario"
	"github.com/protobench/protobench/internal/stats"
)

const gainScenario = `name: reuse
description: connection reuse
published:
  hardware: {description: a big machine, cores: 32}
  method: Locust
  figures:
    - {name: connection-reuse, measures: QPS gain from reuse, value: 18, unit: "%", metric: throughput_gain_percent,
       step: reuse, target: python-grpc, match: {requests_per_connection: forever}, versus: {requests_per_connection: 1}}
steps:
  - name: reuse
    targets: [python-grpc]
    method: Echo
    connections: 1000
    matrix:
      tls: [true, false]
      requests_per_connection: [1, forever]
`

func gainPlan(t *testing.T, repeats int) *scenario.Plan {
	t.Helper()
	sc, err := scenario.Parse("reuse.yaml", []byte(gainScenario))
	if err != nil {
		t.Fatal(err)
	}
	plan, err := sc.Plan(scenario.PlanOptions{Cores: 2, Repeat: repeats})
	if err != nil {
		t.Fatal(err)
	}
	return plan
}

// gainRecords gives each run of the plan the throughput rps(step, repeat); skip leaves runs out.
func gainRecords(plan *scenario.Plan, rps func(step string, repeat int) float64, skip func(step string) bool) []record.Record {
	var recs []record.Record
	for _, run := range plan.Runs {
		if skip != nil && skip(run.Step) {
			continue
		}
		r := FromRun(plan, run)
		r.Requests = 1000
		r.ThroughputRPS = rps(run.Step, run.Repeat)
		r.LatencyMs = record.Latency{Mean: 1, P99: 2}
		recs = append(recs, r)
	}
	return recs
}

// Over TLS, reuse gives 1200, 1300, 1100 req/s against 1000, 1000, 1000 with a connection per
// call: per-repeat ratios 1.2, 1.3, 1.1, so the gain is their geometric mean less 1 with a paired
// t interval on their logs; cleartext 2000 against 1600 every time is +25 % with no spread.
func TestGainFromRecords(t *testing.T) {
	plan := gainPlan(t, 3)
	recs := gainRecords(plan, func(step string, repeat int) float64 {
		switch step {
		case "reuse-tls-perconnforever":
			return []float64{0, 1200, 1300, 1100}[repeat]
		case "reuse-tls-perconn1":
			return 1000
		case "reuse-clear-perconnforever":
			return 2000
		}
		return 1600
	}, nil)
	s := Summarize(plan, recs)
	if len(s.Published) != 2 {
		t.Fatalf("published rows %+v, want one per TLS setting", s.Published)
	}
	wantRatio, wantCI := stats.PairedRatio([]float64{1200, 1300, 1100}, []float64{1000, 1000, 1000}, CILevel)
	tls, clear := s.Published[0], s.Published[1]
	if tls.Group == nil || tls.Versus == nil || tls.Group.Step != "reuse-tls-perconnforever" || tls.Versus.Step != "reuse-tls-perconn1" {
		t.Fatalf("TLS row pairs %s over %s", stepName(tls.Group), stepName(tls.Versus))
	}
	if !near(tls.Ours, (wantRatio-1)*100) || !near(tls.CI.Lo, (wantCI.Lo-1)*100) || !near(tls.CI.Hi, (wantCI.Hi-1)*100) ||
		tls.CI.Method != stats.MethodPairedLog || tls.CI.N != 3 {
		t.Errorf("TLS gain %v %+v, want %v [%v, %v]", tls.Ours, tls.CI, (wantRatio-1)*100, (wantCI.Lo-1)*100, (wantCI.Hi-1)*100)
	}
	if math.Abs(tls.Ours-19.7) > 0.1 { // cube root of 1.2 × 1.3 × 1.1 = 1.197
		t.Errorf("TLS gain %v, want about 19.7 %%", tls.Ours)
	}
	if !math.IsNaN(tls.Ratio) || !math.IsNaN(tls.OursPerCore) {
		t.Errorf("a gain has no ratio to the published one nor a per-core value: %+v", tls)
	}
	if clear.Versus == nil || clear.Versus.Step != "reuse-clear-perconn1" || !near(clear.Ours, 25) || !near(clear.CI.Lo, 25) || !near(clear.CI.Hi, 25) {
		t.Errorf("cleartext row %+v over %s, want +25 %% with a zero-width interval", clear, stepName(clear.Versus))
	}

	var b bytes.Buffer
	if err := WriteSummary(&b, plan, recs); err != nil {
		t.Fatal(err)
	}
	md := b.String()
	for _, want := range []string{
		"| connection-reuse | QPS gain from reuse | 18 % | " + GainText(tls.Ours, tls.CI) + " | — | — | — | reuse-tls-perconnforever over reuse-tls-perconn1 (protobench) |",
		"+19.7 % (", "paired t on logs, 95.0 % at n=3 pairs)",
		"| connection-reuse | QPS gain from reuse | 18 % | +25 % (+25 to +25; paired t on logs, 95.0 % at n=3 pairs) |",
		"A gain in throughput compares two variants of a step",
	} {
		if !strings.Contains(md, want) {
			t.Errorf("summary.md lacks %q:\n%s", want, md)
		}
	}
}

// One repeat gives a gain without an interval, and a variant whose divisor did not run gives
// none at all.
func TestGainWithoutIntervalOrDivisor(t *testing.T) {
	plan := gainPlan(t, 1)
	recs := gainRecords(plan, func(step string, _ int) float64 {
		if strings.HasSuffix(step, "forever") {
			return 1180
		}
		return 1000
	}, func(step string) bool { return step == "reuse-clear-perconn1" })
	s := Summarize(plan, recs)
	if len(s.Published) != 2 {
		t.Fatalf("published rows %+v", s.Published)
	}
	tls, clear := s.Published[0], s.Published[1]
	if !near(tls.Ours, 18) || tls.CI.OK {
		t.Errorf("TLS gain %v %+v, want +18 %% and no interval", tls.Ours, tls.CI)
	}
	if got := GainText(tls.Ours, tls.CI); got != "+18 % (no interval: n=1)" {
		t.Errorf("gain text %q", got)
	}
	if clear.Group == nil || clear.Versus != nil || !math.IsNaN(clear.Ours) {
		t.Errorf("cleartext row %+v, want its group, no divisor and no value", clear)
	}
	var b bytes.Buffer
	if err := WriteSummary(&b, plan, recs); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(b.String(), "| not run (nothing to divide by) | — | — | — | reuse-clear-perconnforever (protobench) |") {
		t.Errorf("summary.md does not say the cleartext gain has nothing to divide by:\n%s", b.String())
	}
}

func TestGainText(t *testing.T) {
	for _, c := range []struct {
		gain float64
		iv   stats.Interval
		want string
	}{
		{18, stats.Interval{N: 1}, "+18 % (no interval: n=1)"},
		{-4.5, stats.Interval{Lo: -9, Hi: 0.5, OK: true, Method: stats.MethodPairedLog, Coverage: 0.95, N: 3}, "-4.5 % (-9 to +0.5; paired t on logs, 95.0 % at n=3 pairs)"},
		{math.NaN(), stats.Interval{}, na},
	} {
		if got := GainText(c.gain, c.iv); got != c.want {
			t.Errorf("GainText(%v, %+v) = %q, want %q", c.gain, c.iv, got, c.want)
		}
	}
}
