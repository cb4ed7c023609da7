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

// TestSwarmTwoNodes is the two-host layout on one machine: a second dockerd in its own network
// namespace, with an image store of its own that starts empty, joins this daemon's swarm over
// a veth pair; node 2 is labelled protobench.role=server and this node client, and `protobench
// run --engine swarm` runs the main job's headline and cross-check step (grpc-vs-rest --quick
// --only getuser: our generator and every tool the cross-check lists), so every request crosses
// the overlay's VXLAN over the veth and the images reach node 2 the way they reach a second
// host, through the registry the run starts (its image built by the run when missing). Every
// record must say where each side ran and have throughput. Where the machine refuses a step of
// the set-up, the test skips with the command that failed and its output.
func TestSwarmTwoNodes(t *testing.T) {
	bin, root := requireE2E(t, "a gRPC step across two swarm nodes (--engine swarm)")
	docker := os.Getenv("PROTOBENCH_DOCKER")
	if docker == "" {
		docker = "docker"
	}
	// Names and addresses apart from the twonode package's own test, which may run at once.
	c, sw := twonode.Use(t, twonode.Options{Docker: docker, Name: "pbtwo-e", HostAddr: "10.77.0.9", NodeAddr: "10.77.0.10"})
	// About 4 minutes of work and the images' push and pull; the run first builds the
	// protobench image when the tree changed since the last build, hence the margin.
	ctx, cancel := context.WithTimeout(context.Background(), 25*time.Minute)
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
	out := filepath.Join(dir, "results")
	cmd := exec.CommandContext(ctx, bin, "run", "grpc-vs-rest", "--quick", "--only", swarmOnly, "--engine", "swarm", "--project", project, "--out", out, "--docker", docker)
	cmd.Dir = root
	cmd.Env = append(os.Environ(), "PROTOBENCH_ROOT="+root)
	var buf bytes.Buffer
	cmd.Stdout, cmd.Stderr = &buf, &buf
	started := time.Now()
	err := cmd.Run()
	t.Logf("protobench run --engine swarm on two nodes (%s):\n%s", time.Since(started).Round(time.Second), buf.String())
	if err != nil {
		t.Errorf("protobench run --engine swarm: %v", err)
	}
	for _, kind := range []string{"service", "network", "config", "secret"} {
		if left := dockerLines(t, docker, kind, "ls", "-q", "--filter", "label=protobench.project="+project); left != "" {
			t.Errorf("%ss of project %s left behind: %s", kind, project, left)
		}
	}
	dirs, _ := filepath.Glob(filepath.Join(out, "*-grpc-vs-rest"))
	if len(dirs) != 1 {
		t.Fatalf("expected one results folder under %s, found %v", out, dirs)
	}
	recs, err := results.Load(dirs[0])
	if err != nil {
		t.Fatal(err)
	}
	want := fmt.Sprintf("server=%s client=%s", c.Hostname, manager)
	checkMainJobRecords(t, root, recs, func(name string, r record.Record) {
		if r.Engine != "swarm" || r.Placement != want {
			t.Errorf("%s: engine %q, placement %q; want swarm, %q (server on node 2, client on node 1)", name, r.Engine, r.Placement, want)
		}
		if r.HasFlag(record.FlagSharedCores) {
			t.Errorf("%s: flags %v: shared-cores on a two-node placement", name, r.Flags)
		}
		// The server's CPU comes from the cAdvisor task on node 2, scraped across the overlay
		// by Prometheus on node 1 (checkMainJobRecords checks it is there).
		t.Logf("%s on %s: %.0f req/s, server CPU %.2f s", name, r.Placement, r.ThroughputRPS, r.ServerCPUSeconds)
	})

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
