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

	"github.com/protobench/protobench/internal/loadgen"
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
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
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
		t.Errorf("flags %v: shared_cores on a two-node placement", r.Flags)
	}
	if r.ThroughputRPS <= 0 || r.Error != "" {
		t.Fatalf("throughput %.1f req/s (error: %s)", r.ThroughputRPS, r.Error)
	}
	t.Logf("%s/%s/%s on %s: %.0f req/s", r.Step, r.Target, r.Tool, r.Placement, r.ThroughputRPS)
}

// TestSwarmTwoNodesByHand lays out what the engine does, with the docker CLI: the gRPC server on
// the second node and our generator on this one, with the image copied by docker save | load.
// It tells a network problem between the nodes from a problem of the engine.
func TestSwarmTwoNodesByHand(t *testing.T) {
	_, _ = requireE2E(t, "a gRPC server on a second swarm node and the generator on this one")
	docker := os.Getenv("PROTOBENCH_DOCKER")
	if docker == "" {
		docker = "docker"
	}
	const image = "protobench/protobench:latest"
	if out, err := exec.Command(docker, "image", "inspect", "--format", "{{.ID}}", image).CombinedOutput(); err != nil {
		t.Skipf("needs %s (./run.sh images build): %s", image, strings.TrimSpace(string(out)))
	}
	// Names and addresses apart from the twonode package's own test, which may run at once.
	c, sw := twonode.Use(t, twonode.Options{Docker: docker, Name: "pbtwo-e", HostAddr: "10.77.0.9", NodeAddr: "10.77.0.10"})
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	d := func(args ...string) string {
		t.Helper()
		out, err := exec.CommandContext(ctx, docker, args...).CombinedOutput()
		if err != nil {
			t.Fatalf("docker %s: %v: %s", strings.Join(args, " "), err, out)
		}
		return strings.TrimSpace(string(out))
	}
	manager := d("node", "inspect", "--format", "{{.Description.Hostname}}", sw.NodeID)
	// One key, one value per node: this node is the client; with no monitor node Prometheus
	// stays on the manager, which is this node too.
	for _, l := range []struct{ node, role string }{{c.NodeID, "server"}, {sw.NodeID, "client"}} {
		if err := c.Label(ctx, l.node, "protobench.role", l.role); err != nil {
			t.Fatal(err)
		}
	}
	project := fmt.Sprintf("pbtest-two-%d", os.Getpid())
	t.Cleanup(func() { removeSwarmProject(t, docker, project) })

	// The second daemon has no images and this machine no registry to pull from: copy the one
	// image both sides need.
	start := time.Now()
	if err := c.LoadImages(ctx, image); err != nil {
		t.Fatal(err)
	}
	t.Logf("copied %s to %s in %s", image, c.Hostname, time.Since(start).Round(100*time.Millisecond))

	// By hand, as the swarm engine lays a step out: one attachable overlay, the server behind
	// its compose name (dnsrr, so no VIP in the path) on the server node, the generator as a
	// replicated job on the client node writing its result into a host folder.
	label := "protobench.project=" + project
	net := project + "-net"
	d("network", "create", "--driver", "overlay", "--attachable", "--label", label, net)
	d("service", "create", "--detach", "--no-resolve-image", "--name", project+"-grpc",
		"--label", label, "--container-label", label,
		"--network", "name="+net+",alias=grpc", "--endpoint-mode", "dnsrr",
		"--constraint", "node.labels.protobench.role==server", "--limit-cpu", "1",
		"--env", "PROTOBENCH_LISTEN=:50051", "--env", "PROTOBENCH_METRICS_LISTEN=:9100",
		"--entrypoint", "/usr/local/bin/protobench-grpc-server", image)
	waitSwarmTask(t, ctx, docker, project+"-grpc", "Running")
	raw := t.TempDir()
	d("service", "create", "--detach", "--no-resolve-image", "--name", project+"-loadgen",
		"--label", label, "--container-label", label, "--mode", "replicated-job",
		"--network", net, "--constraint", "node.labels.protobench.role==client", "--limit-cpu", "1",
		"--mount", "type=bind,source="+raw+",target=/raw", "--user", "0:0", // as compose's tools: root writes into the test's folder
		"--entrypoint", "protobench", image,
		"load", "--target", "grpc://grpc:50051", "--method", "Echo", "--payload-bytes", "64",
		"--connections", "2", "--concurrency", "8", "--warmup", "1s", "--duration", "3s",
		"--progress", "off", "--out", "/raw/result.json")
	waitSwarmTask(t, ctx, docker, project+"-loadgen", "Complete")

	placed := map[string]string{
		"grpc":    d("service", "ps", "--format", "{{.Node}}", "--filter", "desired-state=running", project+"-grpc"),
		"loadgen": d("service", "ps", "--format", "{{.Node}}", project+"-loadgen"),
	}
	if placed["grpc"] != c.Hostname || placed["loadgen"] != manager {
		t.Errorf("placement: server on %q, generator on %q; want server on %s (node 2), generator on %s (node 1)",
			placed["grpc"], placed["loadgen"], c.Hostname, manager)
	}
	b, err := os.ReadFile(filepath.Join(raw, "result.json"))
	if err != nil {
		t.Fatalf("the generator wrote no result: %v\n%s", err, d("service", "logs", "--raw", project+"-loadgen"))
	}
	var res loadgen.Result
	if err := json.Unmarshal(b, &res); err != nil {
		t.Fatalf("result.json: %v", err)
	}
	if res.ThroughputRPS <= 0 || res.Errors > 0 {
		t.Fatalf("server on node 2, generator on node 1: %.0f req/s, %d errors of %d", res.ThroughputRPS, res.Errors, res.Requests)
	}
	t.Logf("gRPC Echo 64 B, server on %s, generator on %s, over the overlay across the veth: %.0f req/s, %d requests",
		placed["grpc"], placed["loadgen"], res.ThroughputRPS, res.Requests)
}

func waitSwarmTask(t *testing.T, ctx context.Context, docker, service, want string) {
	t.Helper()
	var last string
	for ctx.Err() == nil {
		out, _ := exec.CommandContext(ctx, docker, "service", "ps", "--no-trunc", "--format",
			"{{.Node}} {{.CurrentState}} {{.Error}}", service).CombinedOutput()
		last = strings.TrimSpace(string(out))
		if strings.Contains(last, want) {
			return
		}
		if strings.Contains(last, "Failed") || strings.Contains(last, "Rejected") || strings.Contains(last, "no suitable node") {
			break
		}
		time.Sleep(500 * time.Millisecond)
	}
	logs, _ := exec.Command(docker, "service", "logs", "--raw", service).CombinedOutput()
	t.Fatalf("service %s never reached %s: %s\nlogs:\n%s", service, want, last, logs)
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
