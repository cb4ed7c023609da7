package runner

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/protobench/protobench/internal/compose"
	"github.com/protobench/protobench/internal/engine"
	"github.com/protobench/protobench/internal/hostspeed"
	"github.com/protobench/protobench/internal/prom/promtest"
	"github.com/protobench/protobench/internal/results"
)

// stackEngine is fakeEngine with an observability stack: Up is recorded among the calls, and
// Locate answers with a real Prometheus that scrapes itself as the job "cadvisor", so that the
// run gets past its wait for the first scrape.
type stackEngine struct {
	fakeEngine
	prometheus string
}

func (e *stackEngine) Up(context.Context, map[string]string, ...string) error {
	e.call("up")
	return nil
}

func (e *stackEngine) Locate(context.Context) (string, string, error) {
	return e.prometheus, "", nil
}

// TestHostSpeedSampledWithTheStackUp: the host speed index's start sample is taken after the
// observability stack is up, as its end sample is, so that the drift between the two is the
// machine's and not the stack's (issue 38; the start sample was taken before Up).
func TestHostSpeedSampledWithTheStackUp(t *testing.T) {
	addr := promtest.FreeAddr(t)
	config := "global: {scrape_interval: 1s}\nscrape_configs:\n  - job_name: cadvisor\n    static_configs: [{targets: ['" + addr + "']}]\n"
	eng := &stackEngine{fakeEngine: fakeEngine{caps: engine.Capabilities{Name: "fake", ClientNodes: 1}}}
	eng.prometheus = promtest.Start(t, addr, config)
	samples := 0
	env := &environment{
		engine:        eng,
		observability: []string{"prometheus"},
		imageEnv:      map[string]string{compose.ServerUserEnv: "0:0"},
		measureHost: func() (hostspeed.Sample, error) {
			samples++
			eng.call("host speed %d", samples)
			return hostspeed.Sample{Server: float64(samples), Client: float64(samples)}, nil
		},
	}
	var stdout, stderr strings.Builder
	dir, err := execute(context.Background(), Options{OutDir: t.TempDir(), Project: "pbfake", Stdout: &stdout, Stderr: &stderr}, fakePlan(t), env)
	if err != nil {
		t.Logf("execute: %v (the fake tool fails; the folder is still finished)", err)
	}
	up := slices.Index(eng.calls, "up")
	first := slices.Index(eng.calls, "host speed 1")
	last := slices.Index(eng.calls, "host speed 2")
	if up < 0 || first < 0 || last < 0 {
		t.Fatalf("calls %q: want the stack up and two host speed samples", eng.calls)
	}
	if first < up {
		t.Errorf("calls %q: the start sample came before the stack was up", eng.calls)
	}
	if recreate := slices.IndexFunc(eng.calls, func(c string) bool { return strings.HasPrefix(c, "recreate ") }); recreate >= 0 && recreate < first {
		t.Errorf("calls %q: a server started before the start sample", eng.calls)
	}
	b, err := os.ReadFile(filepath.Join(dir, results.RunFile))
	if err != nil {
		t.Fatal(err)
	}
	var info RunInfo
	if err := json.Unmarshal(b, &info); err != nil {
		t.Fatal(err)
	}
	if info.HostSpeed == nil || info.HostSpeed.Start == nil || info.HostSpeed.End == nil ||
		info.HostSpeed.Start.Server != 1 || info.HostSpeed.End.Server != 2 {
		t.Errorf("run.json host_speed %+v, want the start sample 1 and the end sample 2", info.HostSpeed)
	}
}
