package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/protobench/protobench/internal/record"
	"github.com/protobench/protobench/internal/results"
	"github.com/protobench/protobench/internal/scenario"
	"github.com/protobench/protobench/internal/swarm/swarmtest"
)

// busyScenario is one gRPC run with our generator, long enough for a few node-exporter samples.
const busyScenario = `name: busy-host
description: one gRPC run, beside a spinning process or not (the busy-host test)
defaults:
  warmup: 1s
  duration: 6s
  repeats: 1
  cooldown: 0s
steps:
  - name: grpc
    description: our generator against gRPC
    targets: [grpc]
    tools: [protobench]
    method: GetUser
    connections: 1
    concurrency: 16
`

// TestBusyHost runs the same gRPC step twice through the compose stack: once on a quiet host,
// and once beside a process this test starts, pinned with taskset to the tool's cpuset and
// spinning there, and ends by its PID. The busy run must say that other processes used the
// tool's core (client_cores.others_percent at the busy-host threshold or above, the flag, the
// summary's line, and compare's warning); the quiet run must not.
func TestBusyHost(t *testing.T) {
	c := requireE2E(t, "a run beside a spinning process (busy-host)")
	taskset, err := exec.LookPath("taskset")
	if err != nil {
		t.Skipf("taskset (util-linux) is not installed: %v", err)
	}
	swarmtest.ComposeStack(t)
	project := fmt.Sprintf("pbtest-busy-%d", os.Getpid())
	dir := t.TempDir()
	scenarioFile := filepath.Join(dir, "busy-host.yaml")
	if err := os.WriteFile(scenarioFile, []byte(busyScenario), 0o644); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Minute)
	defer cancel()
	run := func(name string, args ...string) (string, error) {
		started := time.Now()
		out, err := c.run(ctx, args...)
		t.Logf("%s (%s):\n%s", name, time.Since(started).Round(time.Second), out)
		return out, err
	}
	measure := func(name string) (string, record.Record, scenario.Layout) {
		out := filepath.Join(dir, name)
		if _, err := run("protobench run "+name, "run", scenarioFile, "--project", project, "--out", out); err != nil {
			t.Fatalf("protobench run (%s): %v", name, err)
		}
		folders, _ := filepath.Glob(filepath.Join(out, "*-busy-host"))
		if len(folders) != 1 {
			t.Fatalf("expected one results folder under %s, found %v", out, folders)
		}
		recs, err := results.Load(folders[0])
		if err != nil || len(recs) != 1 {
			t.Fatalf("%s: %d records (%v), want 1", name, len(recs), err)
		}
		var info struct {
			Layout scenario.Layout `json:"cpu_layout"`
		}
		b, err := os.ReadFile(filepath.Join(folders[0], "run.json"))
		if err == nil {
			err = json.Unmarshal(b, &info)
		}
		if err != nil {
			t.Fatal(err)
		}
		return folders[0], recs[0], info.Layout
	}
	others := func(ct *record.CoreTime) string {
		if ct == nil || ct.OthersPercent == nil {
			return "unknown"
		}
		return fmt.Sprintf("%.1f %%", *ct.OthersPercent)
	}

	quietDir, quiet, layout := measure("quiet")
	t.Logf("quiet run: others on the server's cores %s, on the tool's %s; flags %v", others(quiet.ServerCores), others(quiet.ClientCores), quiet.Flags)
	if layout.Shared || layout.ClientCPUSet == "" {
		t.Skipf("the layout %+v gives the tool no cores of its own", layout)
	}
	if quiet.ServerCores == nil || quiet.ClientCores == nil || quiet.ServerCores.OthersPercent == nil || quiet.ClientCores.OthersPercent == nil {
		t.Fatalf("quiet run: others_percent missing: server %+v client %+v", quiet.ServerCores, quiet.ClientCores)
	}
	if quiet.HasFlag(record.FlagBusyHost) {
		t.Errorf("quiet run flagged busy-host: others used %s of the server's cores and %s of the tool's", others(quiet.ServerCores), others(quiet.ClientCores))
	}

	// The spinner: a shell loop pinned to the tool's cpuset, in its own process group so that
	// it is ended by its own PID with everything it started.
	spin := exec.Command(taskset, "-c", layout.ClientCPUSet, "/bin/sh", "-c", "while :; do :; done")
	spin.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := spin.Start(); err != nil {
		t.Fatalf("start the spinner: %v", err)
	}
	pid := spin.Process.Pid
	stopSpin := func() {
		_ = syscall.Kill(-pid, syscall.SIGKILL)
		_ = spin.Wait()
	}
	t.Cleanup(stopSpin)
	busyDir, busy, _ := measure("busy")
	stopSpin()
	t.Logf("busy run (spinner pid %d on cpuset %s): others on the server's cores %s, on the tool's %s; flags %v",
		pid, layout.ClientCPUSet, others(busy.ServerCores), others(busy.ClientCores), busy.Flags)
	if busy.ClientCores == nil || busy.ClientCores.OthersPercent == nil || *busy.ClientCores.OthersPercent < results.BusyHostPercent {
		t.Errorf("busy run: others used %s of the tool's cores, want at least %d %%", others(busy.ClientCores), results.BusyHostPercent)
	}
	if !busy.HasFlag(record.FlagBusyHost) {
		t.Errorf("busy run not flagged busy-host: flags %v", busy.Flags)
	}
	summary, err := os.ReadFile(filepath.Join(busyDir, "summary.md"))
	if err != nil || !strings.Contains(string(summary), "1 of 1 runs are busy-host") {
		t.Errorf("the busy run's summary.md does not say it ran on a busy host (%v):\n%s", err, summary)
	}
	// The flag legend names every flag; the busy-host line is what must be absent.
	if quietSummary, _ := os.ReadFile(filepath.Join(quietDir, "summary.md")); strings.Contains(string(quietSummary), "runs are busy-host") {
		t.Errorf("the quiet run's summary.md says it ran on a busy host")
	}
	out, err := run("protobench compare", "compare", "--out", filepath.Join(dir, "compare.html"), quietDir, busyDir)
	if err != nil || !strings.Contains(out, "Warning: a folder ran on a busy host") || !strings.Contains(out, busyDir) {
		t.Errorf("compare of the quiet and the busy folder does not warn about %s (%v)", busyDir, err)
	}
}
