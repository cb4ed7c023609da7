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
	"github.com/protobench/protobench/internal/swarm/swarmtest"
)

// TestSwarmEndToEnd runs a short scenario (gRPC and REST with our generator, gRPC with ghz)
// through `protobench run --engine swarm` on a single-node swarm, and checks what issue 14 asks
// of it: records with throughput and the server's CPU from cAdvisor, engine and placement in
// every record with the shared-cores flag, run.json's swarm section, and afterwards nothing of
// the project's left and the swarm as it was.
func TestSwarmEndToEnd(t *testing.T) {
	bin, root := requireE2E(t, "a scenario on a single-node swarm (--engine swarm)")
	sw := swarmtest.Use(t)
	project := fmt.Sprintf("pbtest-swarm-%d", os.Getpid())
	before := swarmState(t, sw.Docker, project)

	out := t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Minute)
	defer cancel()
	scenario, err := filepath.Abs("testdata/swarm-mini.yaml")
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.CommandContext(ctx, bin, "run", scenario, "--engine", "swarm", "--out", out, "--project", project, "--docker", sw.Docker)
	cmd.Dir = root
	cmd.Env = append(os.Environ(), "PROTOBENCH_ROOT="+root)
	var buf bytes.Buffer
	cmd.Stdout, cmd.Stderr = &buf, &buf
	started := time.Now()
	err = cmd.Run()
	t.Logf("protobench run --engine swarm (%s):\n%s", time.Since(started).Round(time.Second), buf.String())
	if err != nil {
		t.Fatalf("protobench run --engine swarm: %v", err)
	}

	if after := swarmState(t, sw.Docker, project); after != before {
		t.Errorf("the swarm is not as it was:\nbefore: %s\nafter:  %s", before, after)
	}
	for _, kind := range []string{"service", "network", "config", "secret"} {
		if left := dockerLines(t, sw.Docker, kind, "ls", "-q", "--filter", "label=protobench.project="+project); left != "" {
			t.Errorf("%ss of project %s left behind: %s", kind, project, left)
		}
	}

	dirs, _ := filepath.Glob(filepath.Join(out, "*-swarm-mini"))
	if len(dirs) != 1 {
		t.Fatalf("expected one results folder under %s, found %v", out, dirs)
	}
	recs, err := results.Load(dirs[0])
	if err != nil {
		t.Fatal(err)
	}
	if len(recs) != 3 {
		t.Fatalf("%d records, want 3", len(recs))
	}
	targets := map[string]bool{}
	for _, r := range recs {
		name := r.Step + "/" + r.Target + "/" + r.Tool
		targets[r.Target] = true
		if r.ThroughputRPS <= 0 || r.Error != "" {
			t.Errorf("%s: throughput %.1f (error: %s)", name, r.ThroughputRPS, r.Error)
		}
		if r.ServerCPUSeconds <= 0 {
			t.Errorf("%s: no server CPU from cAdvisor", name)
		}
		if r.Engine != "swarm" || r.Placement != "single-node" || !r.HasFlag(record.FlagSharedCores) {
			t.Errorf("%s: engine %q placement %q flags %v", name, r.Engine, r.Placement, r.Flags)
		}
		if !strings.Contains(strings.Join(r.Notes, " "), "cpuset") {
			t.Errorf("%s: no note that swarm has no cpuset: %v", name, r.Notes)
		}
		if len(r.RawFiles) < 2 {
			t.Errorf("%s: raw files %v", name, r.RawFiles)
		}
	}
	if !targets["grpc"] || !targets["rest"] {
		t.Errorf("records for %v, want grpc and rest", targets)
	}

	var info struct {
		Engine string `json:"engine"`
		Swarm  *struct {
			Nodes []struct {
				Hostname      string `json:"hostname"`
				Cores         int    `json:"cores"`
				Kernel        string `json:"kernel"`
				DockerVersion string `json:"docker_version"`
			} `json:"nodes"`
			Network struct {
				Driver string `json:"driver"`
				MTU    int    `json:"mtu"`
			} `json:"network"`
			Placement  string `json:"placement"`
			TaskNofile int    `json:"task_nofile"`
		} `json:"swarm"`
	}
	b, err := os.ReadFile(filepath.Join(dirs[0], "run.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &info); err != nil {
		t.Fatal(err)
	}
	switch {
	case info.Engine != "swarm" || info.Swarm == nil:
		t.Errorf("run.json: engine %q, swarm %v", info.Engine, info.Swarm)
	case len(info.Swarm.Nodes) != 1 || info.Swarm.Nodes[0].Cores == 0 || info.Swarm.Nodes[0].DockerVersion == "" || info.Swarm.Nodes[0].Kernel == "":
		t.Errorf("run.json nodes: %+v", info.Swarm.Nodes)
	case info.Swarm.Network.Driver != "overlay" || info.Swarm.Network.MTU == 0 || info.Swarm.Placement != "single-node":
		t.Errorf("run.json network and placement: %+v %q", info.Swarm.Network, info.Swarm.Placement)
	case info.Swarm.TaskNofile < 16384:
		t.Errorf("run.json: tool tasks' open-files limit %d, want at least 16384 for 10,000 connections", info.Swarm.TaskNofile)
	}
}

// swarmState is what a run must leave as it found it: the swarm membership, the node labels,
// and the names of every service, network, config and secret (the project's and anyone's).
func swarmState(t *testing.T, docker, project string) string {
	t.Helper()
	var parts []string
	parts = append(parts, dockerLines(t, docker, "info", "--format", "{{.Swarm.LocalNodeState}} {{.Swarm.NodeID}} {{.Swarm.Nodes}}"))
	parts = append(parts, dockerLines(t, docker, "node", "ls", "--format", "{{.ID}} {{.Hostname}}"))
	parts = append(parts, dockerLines(t, docker, "node", "inspect", "--format", "{{json .Spec.Labels}}", "self"))
	for _, kind := range []string{"service", "network", "config", "secret"} {
		args := []string{kind, "ls", "--format", "{{.Name}}"}
		if kind == "network" {
			// Compose networks of other tests come and go meanwhile; the swarm-scoped ones are ours to keep as found.
			args = append(args, "--filter", "scope=swarm")
		}
		parts = append(parts, kind+"s: "+dockerLines(t, docker, args...))
	}
	return strings.Join(parts, " | ")
}

func dockerLines(t *testing.T, docker string, args ...string) string {
	t.Helper()
	out, err := exec.Command(docker, args...).CombinedOutput()
	if err != nil {
		t.Fatalf("%s %s: %v: %s", docker, strings.Join(args, " "), err, out)
	}
	return strings.Join(strings.Fields(string(out)), " ")
}
