package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/protobench/protobench/internal/record"
	"github.com/protobench/protobench/internal/results"
	"github.com/protobench/protobench/internal/scenario"
	"github.com/protobench/protobench/internal/swarm/swarmtest"
)

// TestSwarmEndToEnd runs the main job's headline and its cross-check step (grpc-vs-rest
// --quick --only getuser: our generator, then every tool the cross-check step lists) through
// `protobench run --engine swarm` on a single-node swarm, and checks that every run measured:
// records with throughput and the server's CPU from cAdvisor, engine and placement in every
// record with the shared-cores flag, every listed tool present, the headline's Go server given
// GOMAXPROCS from its CPU limit and not throttled, run.json's swarm section, and afterwards
// nothing of the project's left and the swarm as it was.
func TestSwarmEndToEnd(t *testing.T) {
	c := requireE2E(t, "the main job's headline and cross-check on a single-node swarm (--engine swarm)")
	sw := swarmtest.Use(t)
	project := fmt.Sprintf("pbtest-swarm-%d", os.Getpid())
	before := swarmState(t, sw.Docker, project)

	out := t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), 18*time.Minute)
	defer cancel()
	started := time.Now()
	output, err := c.run(ctx, "run", "grpc-vs-rest", "--quick", "--only", swarmOnly, "--engine", "swarm", "--out", out, "--project", project, "--docker", sw.Docker)
	t.Logf("protobench run --engine swarm (%s):\n%s", time.Since(started).Round(time.Second), output)
	if err != nil {
		t.Errorf("protobench run --engine swarm: %v", err)
	}

	if after := swarmState(t, sw.Docker, project); after != before {
		t.Errorf("the swarm is not as it was:\nbefore: %s\nafter:  %s", before, after)
	}
	for _, kind := range []string{"service", "network", "config", "secret"} {
		if left := dockerLines(t, sw.Docker, kind, "ls", "-q", "--filter", "label=protobench.project="+project); left != "" {
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
	checkMainJobRecords(t, c.root, swarmOnly, recs, func(name string, r record.Record) {
		if r.Engine != "swarm" || r.Placement != "single-node" || !r.HasFlag(record.FlagSharedCores) {
			t.Errorf("%s: engine %q placement %q flags %v", name, r.Engine, r.Placement, r.Flags)
		}
		if !strings.Contains(strings.Join(r.Notes, " "), "cpuset") {
			t.Errorf("%s: no note that swarm has no cpuset: %v", name, r.Notes)
		}
	})

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

// checkMainJobRecords checks the records of grpc-vs-rest --quick --only getuser: one per run of
// that plan, every one measured (no error, throughput, the server's CPU, raw files), every
// tool the cross-check step lists present on each of its targets, and the headline's gRPC
// server (a Go server) given GOMAXPROCS from its CPU limit and not throttled. each adds the
// engine's own checks per record.
func checkMainJobRecords(t *testing.T, root, only string, recs []record.Record, each func(name string, r record.Record)) {
	t.Helper()
	sc, err := scenario.Find("grpc-vs-rest", filepath.Join(root, "scenarios"))
	if err != nil {
		t.Fatal(err)
	}
	plan, err := sc.Plan(scenario.PlanOptions{Quick: true, Only: only, Cores: runtime.NumCPU()})
	if err != nil {
		t.Fatal(err)
	}
	if len(recs) != len(plan.Runs) {
		t.Errorf("%d records, want one per run of the plan (%d)", len(recs), len(plan.Runs))
	}
	seen := map[string]bool{}
	for _, r := range recs {
		name := r.Step + "/" + r.Target + "/" + r.Tool
		seen[name] = true
		if !r.Valid() || r.ThroughputRPS <= 0 {
			t.Errorf("%s: failed: throughput %.1f, error: %s, flags %v", name, r.ThroughputRPS, r.Error, r.Flags)
		}
		if r.ServerCPUSeconds <= 0 {
			t.Errorf("%s: no server CPU from cAdvisor", name)
		}
		if len(r.RawFiles) < 2 {
			t.Errorf("%s: raw files %v", name, r.RawFiles)
		}
		each(name, r)
		if strings.HasPrefix(r.Step, "getuser-tls") && (r.TLS == nil || r.TLS.Version != "TLS 1.3") {
			t.Errorf("%s: TLS state %+v; want the server's handshakes on TLS 1.3", name, r.TLS)
		}
		if r.Step == "getuser" && r.Target == "grpc" {
			// The headline: GOMAXPROCS is the server's 1-core limit rounded up, the server's
			// own runtime reports it, and CFS did not throttle it.
			if r.ServerGOMAXPROCSSet != 1 || r.ServerGOMAXPROCS != 1 {
				t.Errorf("%s: GOMAXPROCS set %d, reported by the server %d; want 1 and 1 (its CPU limit, rounded up)", name, r.ServerGOMAXPROCSSet, r.ServerGOMAXPROCS)
			}
			if r.HasFlag(record.FlagThrottled) {
				t.Errorf("%s: throttled (%.2f s of %.1f s)", name, r.ServerThrottledSeconds, r.DurationS)
			}
			t.Logf("%s: %.0f req/s, GOMAXPROCS %d, server throttled %.3f s of %.1f s, server CPU %.0f %% of its cap",
				name, r.ThroughputRPS, r.ServerGOMAXPROCS, r.ServerThrottledSeconds, r.DurationS, r.ServerCPUPercentOfCap)
		}
	}
	var cross *scenario.Step
	for i := range sc.Steps {
		if sc.Steps[i].Name == "getuser-crosscheck" {
			cross = &sc.Steps[i]
		}
	}
	if cross == nil {
		t.Fatal("grpc-vs-rest has no getuser-crosscheck step")
	}
	for _, run := range plan.Runs {
		if name := run.Step + "/" + run.Target + "/" + run.Tool; !seen[name] {
			t.Errorf("no record of %s", name)
		}
	}
	if !strings.Contains(only, cross.Name) {
		return
	}
	for _, tl := range cross.Tools {
		found := false
		for _, r := range recs {
			found = found || r.Step == cross.Name && r.Tool == tl
		}
		if !found {
			t.Errorf("the cross-check step lists %s, which no record measured", tl)
		}
	}
}

// swarmOnly picks the main job's headline, its cross-check and the headline over TLS 1.3 (whose
// certificates reach every node as swarm configs) by exact name: "getuser" alone is a substring
// filter and would pick every getuser step, churn and equal load included.
const swarmOnly = "getuse[r],getuser-crosscheck,getuser-tls-tls"
