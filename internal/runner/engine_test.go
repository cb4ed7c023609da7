package runner

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/protobench/protobench/internal/engine"
	"github.com/protobench/protobench/internal/images"
	"github.com/protobench/protobench/internal/measure"
	"github.com/protobench/protobench/internal/prom"
	"github.com/protobench/protobench/internal/record"
	"github.com/protobench/protobench/internal/scenario"
	_ "github.com/protobench/protobench/internal/tool/protobenchtool" // the adapter the run looks up
)

// fakeEngine is an engine.Engine that starts nothing: it keeps the calls a run makes, and its
// tool fails.
type fakeEngine struct {
	caps  engine.Capabilities
	calls []string
	envs  []map[string]string // the environment of each Recreate and Run
}

var _ engine.Engine = (*fakeEngine)(nil)

func (f *fakeEngine) call(format string, args ...any) {
	f.calls = append(f.calls, fmt.Sprintf(format, args...))
}

func (f *fakeEngine) Capabilities() engine.Capabilities { return f.caps }
func (f *fakeEngine) Prepare(context.Context, images.Set, map[string]string) error {
	return nil
}
func (f *fakeEngine) Up(context.Context, map[string]string, ...string) error { return nil }
func (f *fakeEngine) Locate(context.Context) (string, string, error)         { return "", "", nil }
func (f *fakeEngine) Recreate(_ context.Context, service string, env map[string]string) error {
	f.call("recreate %s", service)
	f.envs = append(f.envs, env)
	return nil
}
func (f *fakeEngine) WaitHealthy(_ context.Context, service string, _ time.Duration) error {
	f.call("healthy %s", service)
	return nil
}
func (f *fakeEngine) ContainerID(_ context.Context, service string) (string, error) {
	return "id-" + service, nil
}
func (f *fakeEngine) Run(_ context.Context, o engine.OneOff) ([]byte, []byte, int, error) {
	f.call("run %s %s", o.Service, o.Name)
	f.envs = append(f.envs, o.Env)
	return nil, []byte("no route to host\n"), 1, errors.New("exit status 1")
}
func (f *fakeEngine) Remove(_ context.Context, service string) error {
	f.call("remove %s", service)
	return nil
}
func (f *fakeEngine) Inspect(_ context.Context, id string) (engine.ContainerState, error) {
	f.call("inspect %s", id)
	return engine.ContainerState{ID: id, Status: "exited", ExitCode: 2}, nil
}
func (f *fakeEngine) Logs(_ context.Context, id string) ([]byte, error) {
	f.call("logs %s", id)
	return []byte("panic: boom\n"), nil
}
func (f *fakeEngine) PlaceStack(_ context.Context, services []string, cpuset string) error {
	f.call("place %s on %s", strings.Join(services, ","), cpuset)
	return nil
}
func (f *fakeEngine) Annotate(rec *record.Record)                 { rec.Engine = f.caps.Name }
func (f *fakeEngine) Describe(context.Context) engine.Description { return engine.Description{} }
func (f *fakeEngine) Lost() error                                 { return nil }
func (f *fakeEngine) Down(context.Context) error                  { return nil }
func (f *fakeEngine) ForceRemove(context.Context) error           { return nil }
func (f *fakeEngine) ProjectContainers(context.Context) ([]string, error) {
	return nil, nil
}

func fakePlan(t *testing.T) *scenario.Plan {
	t.Helper()
	sc, err := scenario.Parse("fake.yaml", []byte(`name: fake-engine
description: one closed-model step
defaults: {warmup: 1s, duration: 2s, repeats: 1, cooldown: 0s}
steps:
  - name: echo
    targets: [grpc]
    tools: [protobench]
    method: Echo
    connections: 1
    concurrency: 1
`))
	if err != nil {
		t.Fatal(err)
	}
	plan, err := sc.Plan(scenario.PlanOptions{Cores: 2})
	if err != nil {
		t.Fatal(err)
	}
	return plan
}

// TestStepThroughTheEngine: one run against an engine that starts nothing goes through the
// engine in order (the server, its health, the tool with the step's labels), and a failed tool
// beside a server that died fails the record with both causes; the server's log is kept and the
// server removed.
func TestStepThroughTheEngine(t *testing.T) {
	plan := fakePlan(t)
	eng := &fakeEngine{caps: engine.Capabilities{Name: "fake", ClientNodes: 1}}
	dir := t.TempDir()
	if err := os.Mkdir(filepath.Join(dir, "raw"), 0o755); err != nil {
		t.Fatal(err)
	}
	sr := &stepRunner{eng: eng, m: &measure.Measurer{Meter: measure.None{}, Log: t.Logf}, scenario: "fake-engine", runID: "r1",
		resultDir: dir, rawMount: "/raw", project: "pbfake", log: t.Logf}
	rec := sr.run(context.Background(), plan, plan.Runs[0])
	want := []string{"recreate grpc", "healthy grpc", "run loadgen pbfake-loadgen", "logs id-grpc", "inspect id-grpc", "remove grpc"}
	if !slices.Equal(eng.calls, want) {
		t.Errorf("calls %q, want %q", eng.calls, want)
	}
	for i, env := range eng.envs {
		if env["PROTOBENCH_LABEL_RUN_ID"] != "r1" {
			t.Errorf("container %d started without the step's labels: %v", i, env)
		}
	}
	if !strings.HasPrefix(rec.Error, "server grpc exited with code 2") || !strings.Contains(rec.Error, "run protobench: exit status 1") {
		t.Errorf("record error %q", rec.Error)
	}
	if !rec.HasFlag(record.FlagFailed) || !rec.HasFlag(FlagServerFault) {
		t.Errorf("record flags %v", rec.Flags)
	}
	if !slices.ContainsFunc(rec.RawFiles, func(f string) bool { return strings.HasSuffix(f, ".server.grpc.log") }) {
		t.Errorf("the server's log is not kept: %v", rec.RawFiles)
	}
}

// TestCapabilitiesDecideTheMeasurement: the engine's capabilities, not its name, decide whether
// the observability stack follows the tool and whether the host's cores are read.
func TestCapabilitiesDecideTheMeasurement(t *testing.T) {
	plan := fakePlan(t)
	for _, c := range []struct {
		name string
		caps engine.Capabilities
	}{
		{"pins host cores", engine.Capabilities{Name: "a", PinsCores: true, HostCores: true}},
		{"pins nothing", engine.Capabilities{Name: "b"}},
	} {
		eng := &fakeEngine{caps: c.caps}
		s := &session{opts: Options{Project: "pbfake"}, plan: plan, env: &environment{engine: eng, observability: []string{"prometheus"}}}
		sr := s.stepRunner(prom.New("http://127.0.0.1:1"))
		if got := sr.m.Placer != nil; got != c.caps.PinsCores {
			t.Errorf("%s: stack placer set %v, want %v", c.name, got, c.caps.PinsCores)
		}
		if sr.m.HostCores != c.caps.HostCores {
			t.Errorf("%s: host cores %v, want %v", c.name, sr.m.HostCores, c.caps.HostCores)
		}
	}
}
