package obsbench

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
)

// loadRun is a run of protobench's generator as a run's loadgen container (compose's loadgen
// service, through the engine): on the client core with a 1-cpu quota, in a container of its own,
// so that it weighs against the stack's containers on a shared core as it does in a run (a
// process outside Docker's cgroup would weigh against all of Docker's containers together). It
// serves its live metrics where Prometheus scrapes them, and its JSON result lands in the raw
// folder as out.
func loadRun(o options, target, metrics, out, name string) toolRun {
	return toolRun{service: "loadgen", name: name, entrypoint: "protobench", limit: toolLimit(o, o.duration),
		env: stepLabels(name, "protobench"),
		args: []string{"load", "--target", "grpc://" + target, "--method", "GetUser", "--connections", itoa(o.connections), "--concurrency", itoa(o.concurrency),
			"--duration", o.duration.String(), "--warmup", o.warmup.String(), "--out", "/raw/" + filepath.Base(out), "--progress", "off",
			"--metrics-listen", metrics, "--label", "scenario=bench-observability"}}
}

// stepLabels are the compose file's step labels (PROTOBENCH_LABEL_*) of one tool run.
func stepLabels(step, toolName string) map[string]string {
	return map[string]string{"PROTOBENCH_LABEL_SCENARIO": "bench-observability", "PROTOBENCH_LABEL_STEP": step,
		"PROTOBENCH_LABEL_TARGET": "grpc", "PROTOBENCH_LABEL_TOOL": toolName}
}

// runLoad runs the generator (loadRun) and reads its result; its stderr is kept beside it.
func runLoad(ctx context.Context, st *stack, t toolRun, out string) (trial, error) {
	_, stderr, err := st.run(ctx, t)
	if werr := os.WriteFile(out+".stderr", stderr, 0o644); werr != nil && err == nil {
		err = werr
	}
	if err != nil {
		return trial{}, fmt.Errorf("protobench load: %v (see %s.stderr)", err, out)
	}
	b, err := os.ReadFile(out)
	if err != nil {
		return trial{}, err
	}
	var r struct {
		ThroughputRPS float64 `json:"throughput_rps"`
		Requests      int64   `json:"requests"`
		Errors        int64   `json:"errors"`
		DurationS     float64 `json:"duration_s"`
		LatencyMs     struct {
			P99 float64 `json:"p99"`
		} `json:"latency_ms"`
		StartUnix float64       `json:"start_unix"`
		Series    []seriesPoint `json:"series"`
	}
	if err := json.Unmarshal(b, &r); err != nil {
		return trial{}, fmt.Errorf("%s: %w", out, err)
	}
	if r.ThroughputRPS <= 0 || r.DurationS <= 0 || math.IsNaN(r.LatencyMs.P99) {
		return trial{}, fmt.Errorf("%s: no measurement (throughput %.1f over %.1f s)", out, r.ThroughputRPS, r.DurationS)
	}
	return trial{RPS: r.ThroughputRPS, P99Ms: r.LatencyMs.P99, Requests: r.Requests, Errors: r.Errors, Seconds: r.DurationS,
		startUnix: r.StartUnix, series: r.Series}, nil
}
