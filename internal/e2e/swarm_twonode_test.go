package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/protobench/protobench/internal/record"
	"github.com/protobench/protobench/internal/results"
	"github.com/protobench/protobench/internal/swarm/twonode"
)

// twoNodeScenario is one gRPC step with our generator: the least that puts a server on one
// node and a load tool on the other.
const twoNodeScenario = `name: two-node
description: gRPC once with our generator, server and client on two swarm nodes (the two-node test)
defaults:
  warmup: 1s
  duration: 3s
  repeats: 1
  cooldown: 0s
steps:
  - name: grpc
    description: our generator against gRPC, across two nodes
    targets: [grpc]
    tools: [protobench]
    method: Echo
    payload_bytes: 64
    connections: 2
    concurrency: 8
`

// TestSwarmTwoNodes is the two-host layout on one machine: a second dockerd in its own network
// namespace joins this daemon's swarm over a veth pair; node 2 is labelled
// protobench.role=server and this node client, and `protobench run --engine swarm` runs a gRPC
// step, so every request crosses the overlay's VXLAN over the veth and the images reach node 2
// the way they reach a second host. The record must say where each side ran and have
// throughput. Where the machine refuses a step of the set-up, the test skips with the command
// that failed and its output.
func TestSwarmTwoNodes(t *testing.T) {
	bin, root := requireE2E(t, "a gRPC step across two swarm nodes (--engine swarm)")
	docker := os.Getenv("PROTOBENCH_DOCKER")
	if docker == "" {
		docker = "docker"
	}
	// Names and addresses apart from the twonode package's own test, which may run at once.
	c, sw := twonode.Use(t, twonode.Options{Docker: docker, Name: "pbtwo-e", HostAddr: "10.77.0.9", NodeAddr: "10.77.0.10"})
	// About 80 s of work; the run first builds the protobench image when the tree changed
	// since the last build (2 min here), hence the margin.
	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Minute)
	defer cancel()
	manager := dockerLines(t, docker, "node", "inspect", "--format", "{{.Description.Hostname}}", sw.NodeID)
	for _, l := range []struct{ node, role string }{{c.NodeID, "server"}, {sw.NodeID, "client"}} {
		if err := c.Label(ctx, l.node, "protobench.role", l.role); err != nil {
			t.Fatal(err)
		}
	}
	project := fmt.Sprintf("pbtest-two-%d", os.Getpid())
	t.Cleanup(func() { removeSwarmProject(t, docker, project) })

	dir := t.TempDir()
	scenario := filepath.Join(dir, "two-node.yaml")
	if err := os.WriteFile(scenario, []byte(twoNodeScenario), 0o644); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "results")
	cmd := exec.CommandContext(ctx, bin, "run", scenario, "--quick", "--engine", "swarm", "--project", project, "--out", out, "--docker", docker)
	cmd.Dir = root
	cmd.Env = append(os.Environ(), "PROTOBENCH_ROOT="+root)
	var buf bytes.Buffer
	cmd.Stdout, cmd.Stderr = &buf, &buf
	started := time.Now()
	err := cmd.Run()
	t.Logf("protobench run --engine swarm on two nodes (%s):\n%s", time.Since(started).Round(time.Second), buf.String())
	if err != nil {
		t.Fatalf("protobench run --engine swarm: %v", err)
	}
	for _, kind := range []string{"service", "network", "config", "secret"} {
		if left := dockerLines(t, docker, kind, "ls", "-q", "--filter", "label=protobench.project="+project); left != "" {
			t.Errorf("%ss of project %s left behind: %s", kind, project, left)
		}
	}
	dirs, _ := filepath.Glob(filepath.Join(out, "*-two-node"))
	if len(dirs) != 1 {
		t.Fatalf("expected one results folder under %s, found %v", out, dirs)
	}
	recs, err := results.Load(dirs[0])
	if err != nil {
		t.Fatal(err)
	}
	if len(recs) != 1 {
		t.Fatalf("%d records, want 1", len(recs))
	}
	r := recs[0]
	want := fmt.Sprintf("server=%s client=%s", c.Hostname, manager)
	if r.Engine != "swarm" || r.Placement != want {
		t.Errorf("engine %q, placement %q; want swarm, %q (server on node 2, client on node 1)", r.Engine, r.Placement, want)
	}
	if r.HasFlag(record.FlagSharedCores) {
		t.Errorf("flags %v: shared-cores on a two-node placement", r.Flags)
	}
	if r.ThroughputRPS <= 0 || r.Error != "" {
		t.Fatalf("throughput %.1f req/s (error: %s)", r.ThroughputRPS, r.Error)
	}
	// The server's CPU comes from the cAdvisor task on node 2, scraped across the overlay by
	// Prometheus on node 1.
	if r.ServerCPUSeconds <= 0 {
		t.Errorf("no server CPU from node 2's cAdvisor")
	}
	t.Logf("%s/%s/%s on %s: %.0f req/s, server CPU %.2f s", r.Step, r.Target, r.Tool, r.Placement, r.ThroughputRPS, r.ServerCPUSeconds)

	var info struct {
		Swarm *struct {
			Nodes []struct {
				Hostname string `json:"hostname"`
			} `json:"nodes"`
		} `json:"swarm"`
	}
	b, err := os.ReadFile(filepath.Join(dirs[0], "run.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &info); err != nil {
		t.Fatal(err)
	}
	if info.Swarm == nil || len(info.Swarm.Nodes) != 2 {
		t.Errorf("run.json's swarm section lists %+v, want both nodes", info.Swarm)
	}
}

// removeSwarmProject removes the test's services and networks, by its project label only.
func removeSwarmProject(t *testing.T, docker, project string) {
	t.Helper()
	label := "label=protobench.project=" + project
	if out, _ := exec.Command(docker, "service", "ls", "--quiet", "--filter", label).Output(); len(out) > 0 {
		_ = exec.Command(docker, append([]string{"service", "rm"}, strings.Fields(string(out))...)...).Run()
	}
	for i := 0; i < 20; i++ {
		out, _ := exec.Command(docker, "network", "ls", "--quiet", "--filter", label).Output()
		if len(out) == 0 {
			return
		}
		_ = exec.Command(docker, append([]string{"network", "rm"}, strings.Fields(string(out))...)...).Run()
		time.Sleep(500 * time.Millisecond)
	}
	t.Errorf("networks labelled protobench.project=%s still there", project)
}
