// Package reporttest builds results folders from the Go types, in the layout the runner writes,
// for the report and compare tests: small, varied, and without committing large fixtures.
package reporttest

import (
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/protobench/protobench/internal/record"
	"github.com/protobench/protobench/internal/results"
	"github.com/protobench/protobench/internal/scenario"
)

// Scenario is the scenario every generated folder ran: a plain step with a published figure, a
// step measured by a tool without per-second data, and a matrix over connections.
const Scenario = `name: reporttest
description: two targets, a plain step, a cross-check and a connection sweep
published:
  title: An article
  hardware:
    description: one laptop
    cores: 4
  method: a closed loop
  figures:
    - name: grpc-qps
      measures: gRPC GetUser requests per second
      value: 12000
      unit: req/s
      metric: throughput_rps
      step: getuser
      target: grpc
    - name: cited
      measures: a figure we do not measure
      value: 3
      unit: ms
steps:
  - name: getuser
    description: GetUser at 8 connections
    targets: [grpc, rest]
    tools: [protobench]
    method: GetUser
    connections: 8
    concurrency: 1
    baseline: rest
    repeats: 3
    warmup: 1s
    duration: 5s
  - name: crosscheck
    description: the same through wrk
    targets: [rest]
    tools: [wrk]
    method: GetUser
    connections: 8
    concurrency: 1
    repeats: 1
    warmup: 1s
    duration: 5s
  - name: sweep
    description: GetUser over 4, 16 and 64 connections
    targets: [grpc, rest]
    tools: [protobench]
    method: GetUser
    concurrency: 1
    repeats: 3
    warmup: 1s
    duration: 5s
    matrix:
      connections: [4, 16, 64]
  - name: inflight
    description: GetUser at 8 and 32 in flight, each target on its natural topology
    targets: [grpc, rest]
    tools: [protobench]
    method: GetUser
    repeats: 2
    warmup: 1s
    duration: 4s
    matrix:
      in_flight: [8, 32]
  - name: grid
    description: HTTP/1.1 or HTTP/2 with JSON or protobuf, and gRPC
    targets: [rest, grpc]
    tools: [protobench]
    method: GetUser
    in_flight: 8
    repeats: 2
    warmup: 1s
    duration: 4s
    matrix:
      http_version: ["1.1", "2"]
      encoding: [json, protobuf]
`

// Options shape a generated folder.
type Options struct {
	// Speed multiplies every throughput (and divides latency), so that two folders differ.
	Speed float64
	// Jitter is the relative spread between repeats (0.02 = ±2 %).
	Jitter float64
	// Interrupted leaves run.json without a finish time and drops the last runs.
	Interrupted bool
	// GrafanaURL is recorded in run.json, as when Grafana ran.
	GrafanaURL string
	// Quick plans as --quick does: one repeat of each step, cut short.
	Quick bool
	// ScenarioText replaces Scenario (e.g. to make a folder of another scenario).
	ScenarioText string
	// Repeat overrides every step's repeats, as --repeat does.
	Repeat int
	// Phase shifts the jitter's pattern, so that two folders with the same Jitter differ as two
	// runs of the same code do.
	Phase float64
	// HostSpeed, when not 0, is recorded as run.json's host speed index at the start, and
	// HostSpeedEnd (default: the same) at the end, for both roles.
	HostSpeed, HostSpeedEnd float64
	// ImageID replaces the protobench image's ID in run.json.
	ImageID string
}

// Folder writes a results folder under t.TempDir() and returns its path.
func Folder(t testing.TB, opts Options) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "results")
	if err := Write(dir, opts); err != nil {
		t.Fatal(err)
	}
	return dir
}

// Write writes a results folder at dir.
func Write(dir string, opts Options) error {
	if opts.Speed == 0 {
		opts.Speed = 1
	}
	sc, plan, err := planOf(opts)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Join(dir, "raw"), 0o755); err != nil {
		return err
	}
	start := time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC)
	runs := plan.Runs
	if opts.Interrupted {
		runs = runs[:len(runs)-3]
	}
	var recs []record.Record
	for i, r := range runs {
		rec := measured(plan, r, i, opts, start)
		if err := writeRaw(dir, r, &rec); err != nil {
			return err
		}
		recs = append(recs, rec)
	}
	return results.WriteAll(dir, runInfo(sc, plan, opts, start), plan, recs)
}

// planOf parses the folder's scenario and plans it for a 2-core host.
func planOf(opts Options) (*scenario.Scenario, *scenario.Plan, error) {
	text := opts.ScenarioText
	if text == "" {
		text = Scenario
	}
	sc, err := scenario.Parse("scenario.yaml", []byte(text))
	if err != nil {
		return nil, nil, err
	}
	plan, err := sc.Plan(scenario.PlanOptions{Cores: 2, Quick: opts.Quick, Repeat: opts.Repeat})
	if err != nil {
		return nil, nil, err
	}
	return sc, plan, nil
}

// measured is the record of run r, the i-th of the plan, with made-up figures that keep the
// relations a report relies on.
func measured(plan *scenario.Plan, r scenario.Run, i int, opts Options, start time.Time) record.Record {
	rec := results.FromRun(plan, r)
	wobble := 1 + opts.Jitter*math.Sin(float64(7*i+3)+opts.Phase)
	base := 20000.0
	if r.Target == "rest" {
		base = 15000
	}
	// Throughput rises with connections up to a plateau; latency follows Little's law.
	inFlight := float64(r.Connections * r.Concurrency)
	if r.InFlight > 0 {
		inFlight = float64(r.InFlight)
	}
	rec.ThroughputRPS = base * opts.Speed * wobble * inFlight / (inFlight + 4)
	rec.DurationS = r.Duration.Seconds()
	rec.Requests = int64(rec.ThroughputRPS * rec.DurationS)
	meanMs := 1000 * inFlight / rec.ThroughputRPS
	rec.LatencyMs = record.Latency{Mean: meanMs, P50: meanMs * 0.9, P90: meanMs * 1.6, P99: meanMs * 3, P999: meanMs * 6, Max: meanMs * 12}
	rec.ServerCPUSeconds = rec.DurationS * 0.95
	rec.ServerCPUPercentOfCap = 95
	rec.ClientCPUPercentOfCap = 40
	// The server's core as this machine read it at 64 B (2026-11-26): REST's packets cost
	// it a third of its time in softirq, gRPC's a tenth.
	rec.ServerCores = &record.CoreTime{UserPercent: 84, SystemPercent: 4, SoftirqPercent: 10, IdlePercent: 2}
	if r.Target == "rest" {
		rec.ServerCores = &record.CoreTime{UserPercent: 40, SystemPercent: 25, SoftirqPercent: 35}
	}
	rec.CPUMicrosPerRequest = 1e6 * rec.ServerCPUSeconds / float64(rec.Requests)
	rec.StartUnix = float64(start.Add(time.Duration(i)*10*time.Second).UnixNano()) / 1e9
	rec.EndUnix = rec.StartUnix + rec.DurationS
	return rec
}

// writeRaw writes run r's raw files under dir and lists them in rec: the tool's output, and for
// our generator its result and timeline.
func writeRaw(dir string, r scenario.Run, rec *record.Record) error {
	raw := filepath.Join("raw", fmt.Sprintf("%s.%s.stdout", r.ID, r.Tool))
	if err := os.WriteFile(filepath.Join(dir, raw), []byte("tool output\n"), 0o644); err != nil {
		return err
	}
	rec.RawFiles = append(rec.RawFiles, raw)
	if r.Tool != "protobench" {
		return nil
	}
	// Second repeats keep their seconds in the result file, as generators before
	// --timeseries did; the others have the timeline file the runner keeps today.
	legacy := r.Repeat == 2
	name := filepath.Join("raw", r.ID+".json")
	if err := writeJSON(filepath.Join(dir, name), generatorResult(*rec, legacy)); err != nil {
		return err
	}
	rec.RawFiles = append(rec.RawFiles, name)
	if !legacy {
		name := filepath.Join("raw", r.ID+".timeseries.json")
		if err := writeJSON(filepath.Join(dir, name), timeseries(*rec, r.Warmup.Seconds())); err != nil {
			return err
		}
		rec.RawFiles = append(rec.RawFiles, name)
	}
	return nil
}

// runInfo is the folder's run.json, as the runner writes it.
func runInfo(sc *scenario.Scenario, plan *scenario.Plan, opts Options, start time.Time) map[string]any {
	run := map[string]any{
		"run_id": "20261123T120000Z-" + sc.Name, "scenario": sc.Name, "scenario_sha256": sc.Hash(),
		"command": []string{"protobench", "run", sc.Name}, "quick": opts.Quick, "started": start,
		"host": map[string]any{"hostname": "test", "cpu_model": "Test CPU", "cores": 2, "memory_bytes": 8 << 30,
			"kernel": "6.1.0", "os": "Debian GNU/Linux 12 (bookworm)", "cgroup_version": 1,
			"docker_version": "20.10.24", "compose_version": "1.29.2", "git_commit": "0123456789abcdef", "go_version": "go1.26"},
		"compose_version": "1.29.2",
		"images":          []map[string]any{{"name": "protobench", "ref": "protobench/protobench:abc", "id": "sha256:0123456789abcdef0123", "source": "built"}},
		"cpu_layout":      plan.Layout,
		"notes":           []string{},
	}
	if opts.GrafanaURL != "" {
		run["grafana_url"] = opts.GrafanaURL
	}
	if opts.Repeat > 0 {
		run["plan_flags"] = map[string]any{"quick": opts.Quick, "repeat": opts.Repeat}
	}
	if opts.ImageID != "" {
		run["images"].([]map[string]any)[0]["id"] = opts.ImageID
	}
	if opts.HostSpeed > 0 {
		end := opts.HostSpeedEnd
		if end == 0 {
			end = opts.HostSpeed
		}
		run["host_speed"] = map[string]any{"method": "test", "server_cpuset": "1", "client_cpuset": "0",
			"start": map[string]any{"at": start, "server": opts.HostSpeed, "client": opts.HostSpeed},
			"end":   map[string]any{"at": start.Add(time.Hour), "server": end, "client": end}}
	}
	if !opts.Interrupted {
		run["finished"] = start.Add(time.Hour)
	}
	return run
}

// secondFactor is the drift a generated run shows: slow in its first second.
func secondFactor(s int) float64 {
	if s <= 1 {
		return 0.8
	}
	return 1
}

// generatorResult is the part of our generator's result file the report reads: a percentile
// spectrum, and with legacy the per-second "series" older generators wrote there.
func generatorResult(rec record.Record, legacy bool) map[string]any {
	out := map[string]any{"throughput_rps": rec.ThroughputRPS}
	if legacy {
		var series []map[string]any
		for s := 1; s <= int(rec.DurationS); s++ {
			f := secondFactor(s)
			series = append(series, map[string]any{"t_s": float64(s), "requests": int64(rec.ThroughputRPS * f),
				"throughput_rps": rec.ThroughputRPS * f, "p50_ms": rec.LatencyMs.P50, "p99_ms": rec.LatencyMs.P99 / f, "errors": 0})
		}
		out["series"] = series
	}
	var spectrum []map[string]any
	for _, q := range []struct{ p, m float64 }{{0, 0.2}, {50, 0.9}, {75, 1.2}, {90, 1.6}, {99, 3}, {99.9, 6}, {99.99, 9}, {100, 12}} {
		spectrum = append(spectrum, map[string]any{"percentile": q.p, "value_ms": rec.LatencyMs.Mean * q.m, "total_count": rec.Requests})
	}
	out["latency_spectrum"] = spectrum
	return out
}

// timeseries is the run's timeline file: warm-up seconds (at or before 0), then the window.
func timeseries(rec record.Record, warmupS float64) record.Timeseries {
	ts := record.Timeseries{Version: record.TimeseriesVersion, Scenario: rec.Scenario, Step: rec.Step, Target: rec.Target,
		Tool: rec.Tool, Method: rec.Method, Model: rec.Model, StartUnix: rec.StartUnix, EndUnix: rec.EndUnix, IntervalS: 1}
	for s := 1 - int(warmupS); s <= int(rec.DurationS); s++ {
		f := secondFactor(s)
		if s <= 0 {
			f = 0.6
		}
		ts.Points = append(ts.Points, record.TimeseriesPoint{TS: float64(s), SpanS: 1, Warmup: s <= 0,
			Requests: int64(rec.ThroughputRPS * f), ThroughputRPS: rec.ThroughputRPS * f,
			LatencyMs: record.PointLatency{P50: rec.LatencyMs.P50 / f, P99: rec.LatencyMs.P99 / f, Max: rec.LatencyMs.Max / f}})
	}
	return ts
}

func writeJSON(path string, v any) error {
	data, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(path, data, 0o644)
}
