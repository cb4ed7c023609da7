package e2e

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/protobench/protobench/internal/report"
	"github.com/protobench/protobench/internal/swarm/swarmtest"
)

// sameImageScenario declares one image twice, as two custom targets of one step: the sound way
// to compare two builds (docs/statistics.md), here with nothing to find. Both targets' runs of
// a repeat are neighbours in time, in an order the run's seed shuffles, so the paired ratio's
// interval counts only the noise within a repeat.
const sameImageScenario = `name: same-image-e2e
description: one image declared twice in one step; an A/A test of the paired comparison
custom_targets:
  build-a:
    image: protobench/python-grpc:latest
    protocol: grpc
    port: 50051
    health_check: ["python3", "/app/server.py", "--probe"]
  build-b:
    image: protobench/python-grpc:latest
    protocol: grpc
    port: 50051
    health_check: ["python3", "/app/server.py", "--probe"]
defaults:
  warmup: 1s
  duration: 3s
  repeats: 5
  cooldown: 1s
steps:
  - name: a-vs-b
    targets: [build-a, build-b]
    baseline: build-a
    method: GetUser
    tools: [protobench]
    connections: 2
    concurrency: 4
`

// TestSameImageTwiceEndToEnd runs one image as two targets of one step through the real compose
// stack and finds no change: the paired ratio's interval holds 1. It also checks what the
// comparison rests on: the order seed and the host speed index in run.json.
func TestSameImageTwiceEndToEnd(t *testing.T) {
	c := requireE2E(t, "one image as two targets through the compose stack")
	swarmtest.ComposeStack(t)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Minute)
	defer cancel()
	if out, err := c.run(ctx, "images", "build", "python-grpc"); err != nil {
		t.Fatalf("protobench images build python-grpc: %v\n%s", err, out)
	}
	dir := t.TempDir()
	file := filepath.Join(dir, "same-image-e2e.yaml")
	if err := os.WriteFile(file, []byte(sameImageScenario), 0o644); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "results")
	started := time.Now()
	output, err := c.run(ctx, "run", file, "--out", out)
	t.Logf("protobench run same-image-e2e.yaml (%s):\n%s", time.Since(started).Round(time.Second), output)
	if err != nil {
		t.Fatalf("protobench run: %v", err)
	}
	dirs, _ := filepath.Glob(filepath.Join(out, "*-same-image-e2e"))
	if len(dirs) != 1 {
		t.Fatalf("expected one results folder under %s, found %v", out, dirs)
	}
	f, err := report.Load(dirs[0])
	if err != nil {
		t.Fatal(err)
	}
	if len(f.Summary.Ratios) != 1 {
		t.Fatalf("%d ratio rows, want 1 (build-b / build-a)", len(f.Summary.Ratios))
	}
	r := f.Summary.Ratios[0]
	t.Logf("build-b / build-a: paired %.4f %+v; unpaired %.4f %+v; flags %v", r.ThroughputPaired, r.ThroughputPairedCI, r.Throughput, r.ThroughputCI, r.Flags)
	if r.Pairs != 5 || !r.ThroughputPairedCI.OK {
		t.Fatalf("%d pairs, interval %+v; want 5 pairs and an interval", r.Pairs, r.ThroughputPairedCI)
	}
	if !r.ThroughputPairedCI.Contains(1) {
		t.Errorf("the same image against itself: paired throughput ratio %.4f, interval %.4f–%.4f excludes 1",
			r.ThroughputPaired, r.ThroughputPairedCI.Lo, r.ThroughputPairedCI.Hi)
	}
	var info struct {
		PlanFlags struct {
			Seed uint64 `json:"seed"`
		} `json:"plan_flags"`
	}
	data, err := os.ReadFile(filepath.Join(dirs[0], "run.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(data, &info); err != nil {
		t.Fatal(err)
	}
	if info.PlanFlags.Seed == 0 {
		t.Error("run.json keeps no order seed")
	}
	if f.Run.HostSpeed == nil || f.Run.HostSpeed.Start == nil || f.Run.HostSpeed.End == nil || f.Run.HostSpeed.Start.Server <= 0 {
		t.Errorf("run.json's host speed index: %+v", f.Run.HostSpeed)
	}
}
