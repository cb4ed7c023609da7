package e2e

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/protobench/protobench/internal/results"
	"github.com/protobench/protobench/internal/swarm/swarmtest"
)

// customScenario declares our own Python gRPC server as a user's target under another name: built
// by the suite from a Dockerfile outside the repository (on top of our image, which stands in for
// the user's server), with its proto at a path of its own, and driven by our generator and ghz.
const customScenario = `name: custom-e2e
description: a server of the user's own, declared in the scenario
custom_targets:
  my-python:
    dockerfile: server/Dockerfile
    protocol: grpc
    port: 50051
    metrics_port: 9100
    health_check: ["python3", "/app/server.py", "--probe"]
    grpc:
      proto: api/v1/service.proto
      call: protobench.v1.Bench/GetUser
      data: '{"id": 42}'
defaults:
  warmup: 1s
  duration: 4s
  repeats: 1
  cooldown: 1s
steps:
  - name: own-server
    targets: [my-python]
    method: GetUser
    tools: [protobench, ghz]
    connections: 2
    concurrency: 4
`

func TestCustomTargetEndToEnd(t *testing.T) {
	c := requireE2E(t, "a custom target through the compose stack")
	swarmtest.ComposeStack(t)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Minute)
	defer cancel()
	// The user's server: our Python image, which the Dockerfile below builds on.
	if out, err := c.run(ctx, "images", "build", "python-grpc"); err != nil {
		t.Fatalf("protobench images build python-grpc: %v\n%s", err, out)
	}

	dir := t.TempDir()
	proto, err := os.ReadFile(filepath.Join(c.root, "proto", "protobench", "v1", "bench.proto"))
	if err != nil {
		t.Fatal(err)
	}
	files := map[string]string{
		"server/Dockerfile":    "FROM protobench/python-grpc:latest\n",
		"api/v1/service.proto": string(proto),
		"custom-e2e.yaml":      customScenario,
	}
	for name, text := range files {
		p := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	out := filepath.Join(dir, "results")
	started := time.Now()
	output, err := c.run(ctx, "run", filepath.Join(dir, "custom-e2e.yaml"), "--out", out)
	t.Logf("protobench run custom-e2e.yaml (%s):\n%s", time.Since(started).Round(time.Second), output)
	if err != nil {
		t.Fatalf("protobench run: %v", err)
	}
	if !strings.Contains(output, "custom-my-python: built") && !strings.Contains(output, "custom-my-python: cached") {
		t.Errorf("the run does not say how it got the custom target's image")
	}

	dirs, _ := filepath.Glob(filepath.Join(out, "*-custom-e2e"))
	if len(dirs) != 1 {
		t.Fatalf("expected one results folder under %s, found %v", out, dirs)
	}
	recs, err := results.Load(dirs[0])
	if err != nil {
		t.Fatal(err)
	}
	tools := map[string]bool{}
	for _, r := range recs {
		tools[r.Tool] = true
		if r.Target != "my-python" || r.Method != "GetUser" {
			t.Errorf("record for %s/%s, want my-python/GetUser", r.Target, r.Method)
		}
		if r.ThroughputRPS <= 0 || r.Errors > 0 || r.Error != "" {
			t.Errorf("%s: throughput %.1f, %d errors (%s)", r.Tool, r.ThroughputRPS, r.Errors, r.Error)
		}
		// Capped and measured like our own servers: cAdvisor saw its container.
		if r.ServerCPUSeconds <= 0 {
			t.Errorf("%s: server CPU %.3f s, want > 0 from cAdvisor", r.Tool, r.ServerCPUSeconds)
		}
	}
	for _, want := range []string{"protobench", "ghz"} {
		if !tools[want] {
			t.Errorf("no record from %s; records: %d", want, len(recs))
		}
	}
}
