package results

import (
	"bytes"
	"strings"
	"testing"

	"github.com/protobench/protobench/internal/record"
	"github.com/protobench/protobench/internal/scenario"
)

const explainScenario = `name: t
description: grid and topology
defaults: {warmup: 1s, duration: 2s, repeats: 2, cooldown: 0s}
steps:
  - name: topology
    targets: [grpc, rest]
    method: GetUser
    http_version: 2
    in_flight: 100
    matrix:
      connections: [1, 10, 100]
  - name: grid
    targets: [rest, grpc]
    method: GetUser
    in_flight: 100
    matrix:
      http_version: ["1.1", 2]
      encoding: [json, protobuf]
`

// explainRecords gives every planned run a throughput that depends on its cell, so the tables
// can be checked against figures known in advance.
func explainRecords(t *testing.T) (*scenario.Plan, []record.Record) {
	t.Helper()
	sc, err := scenario.Parse("t.yaml", []byte(explainScenario))
	if err != nil {
		t.Fatal(err)
	}
	plan, err := sc.Plan(scenario.PlanOptions{Cores: 2})
	if err != nil {
		t.Fatal(err)
	}
	rps := map[string]float64{
		"grid-h1-json": 50000, "grid-h2-json": 80000, "grid-h1-protobuf": 55000, "grid-h2-protobuf": 88000, "grid": 96000,
	}
	var recs []record.Record
	for _, r := range plan.Runs {
		rec := FromRun(plan, r)
		rec.Requests, rec.DurationS = 1000, 2
		rec.ThroughputRPS = rps[r.Step]
		if r.BaseStep == "topology" {
			rec.ThroughputRPS = 100000 / float64(r.Connections)
		}
		rec.ThroughputRPS += float64(r.Repeat) // repeats differ a little, as real ones do
		rec.LatencyMs.P99 = 3
		rec.CPUMicrosPerRequest = 1e6 / rec.ThroughputRPS
		recs = append(recs, rec)
	}
	return plan, recs
}

func TestCellTableReadsTheGrid(t *testing.T) {
	plan, recs := explainRecords(t)
	s := Summarize(plan, recs)
	if len(s.Cells) != 1 {
		t.Fatalf("got %d cell tables, want 1 (grid)", len(s.Cells))
	}
	ct := s.Cells[0]
	if ct.BaseStep != "grid" || len(ct.Rows) != 5 {
		t.Fatalf("grid table %s has %d rows, want 5", ct.BaseStep, len(ct.Rows))
	}
	ratios := map[string]float64{}
	for _, r := range ct.Rows {
		ratios[r.Label] = r.Ratio
	}
	for label, want := range map[string]float64{
		"rest (HTTP/1.1 + JSON)": 1, "rest (HTTP/2 + JSON)": 80001.5 / 50001.5, "grpc": 96001.5 / 50001.5,
	} {
		if got := ratios[label]; got < want*0.999 || got > want*1.001 {
			t.Errorf("%s ratio %.4f, want %.4f (all %v)", label, got, want, ratios)
		}
	}
	for _, want := range []string{"from HTTP/1.1 to HTTP/2", "changes throughput 1.60×", "grpc over HTTP/2 + protobuf is 1.09×", "1.10× over HTTP/1.1 and 1.10× over HTTP/2", "Overall grpc is 1.92× of rest"} {
		if !strings.Contains(ct.Reading, want) {
			t.Errorf("reading %q lacks %q", ct.Reading, want)
		}
	}
}

func TestTopologySweepTable(t *testing.T) {
	plan, recs := explainRecords(t)
	s := Summarize(plan, recs)
	if len(s.Sweeps) != 1 {
		t.Fatalf("got %d sweeps, want 1", len(s.Sweeps))
	}
	sw := s.Sweeps[0]
	if sw.InFlight != 100 || len(sw.Rows) != 3 || len(sw.Columns) != 2 {
		t.Fatalf("sweep %+v", sw)
	}
	var b bytes.Buffer
	if err := WriteSummary(&b, plan, recs); err != nil {
		t.Fatal(err)
	}
	md := b.String()
	for _, want := range []string{
		"| 10 × 10 |", "## Where the difference comes from (grid)", "## How each target was driven",
		"one gRPC channel (1 HTTP/2 connection) × 100 streams", "100 keep-alive HTTP/1.1 connections, 1 request in flight on each",
	} {
		if !strings.Contains(md, want) {
			t.Errorf("summary lacks %q", want)
		}
	}
}

func TestUnsaturatedFlag(t *testing.T) {
	recs := []record.Record{
		{Model: "closed", Requests: 10, ServerCPUPercentOfCap: 60, ClientCPUPercentOfCap: 40},
		{Model: "closed", Requests: 10, ServerCPUPercentOfCap: 97, ClientCPUPercentOfCap: 40},
		{Model: "closed", Requests: 10, ServerCPUPercentOfCap: 50, ClientCPUPercentOfCap: 95},
		{Model: "open", Requests: 10, ServerCPUPercentOfCap: 20, ClientCPUPercentOfCap: 20},
		{Model: "closed", Requests: 10}, // no CPU figures: nothing can be said
		// The server's container at 85 % of its cap, its core full: the kernel's packet work
		// on that core (softirq) is not charged to the container (smoke, 2026-11-26).
		{Model: "closed", Requests: 10, ServerCPUPercentOfCap: 85, ClientCPUPercentOfCap: 70,
			ServerCores: &record.CoreTime{UserPercent: 46, SystemPercent: 21, SoftirqPercent: 24, IdlePercent: 9}},
		// The same container figure with its core a fifth idle: round trips set the pace.
		{Model: "closed", Requests: 10, ServerCPUPercentOfCap: 85, ClientCPUPercentOfCap: 70,
			ServerCores: &record.CoreTime{UserPercent: 46, SystemPercent: 21, SoftirqPercent: 13, IdlePercent: 20}},
	}
	ApplyFlags(recs)
	for i, want := range []bool{true, false, false, false, false, false, true} {
		if got := recs[i].HasFlag(record.FlagUnsaturated); got != want {
			t.Errorf("record %d: unsaturated = %v, want %v", i, got, want)
		}
	}
}
