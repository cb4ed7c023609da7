package runner

import (
	"context"
	"fmt"
	"path/filepath"
	"time"

	"github.com/protobench/protobench/internal/engine"
	"github.com/protobench/protobench/internal/measure"
	"github.com/protobench/protobench/internal/record"
	"github.com/protobench/protobench/internal/results"
	"github.com/protobench/protobench/internal/scenario"
	"github.com/protobench/protobench/internal/stepinfo"
	"github.com/protobench/protobench/internal/targets"
	"github.com/protobench/protobench/internal/tlscert"
	"github.com/protobench/protobench/internal/tool"
)

// stepRunner runs one planned run: fresh server, warm-up, the tool, its measured window (package
// measure), teardown. It holds only the per-run half of the engine (engine.Runs): the stack is
// the session's.
type stepRunner struct {
	eng       engine.Runs
	m         *measure.Measurer
	steps     *stepinfo.Exporter // the step series for Grafana; nil in a dry run
	scenario  string
	runID     string
	resultDir string // host path of the results folder; raw/ lives inside
	rawMount  string // where raw/ is mounted in tool containers
	promURL   string // Prometheus as tool containers see it, for tools that push metrics
	// toolEnded is when the last run's tool finished: the time since then counts toward the
	// cool-down, so waiting for the metrics does not add to it.
	toolEnded time.Time
	log       func(format string, args ...any)
	// missingTools maps a tool to why it cannot run on this machine.
	missingTools map[string]string
	project      string // compose project: tool containers are named after it
	// labels is the current step's label environment (stepinfo.Step.ComposeEnv), added to every
	// container it starts, so cAdvisor's series carry the step. run sets it for its run.
	labels map[string]string
}

// stepSetup is what differs between the stepRunner of a real run and of a dry run.
type stepSetup struct {
	eng       engine.Runs
	m         *measure.Measurer
	steps     *stepinfo.Exporter // nil: no step series (a dry run)
	runID     string
	resultDir string
	promURL   string            // "" in a dry run, which starts no Prometheus
	missing   map[string]string // missingTools; nil in a dry run, whose images need not exist
}

// newStepRunner is the one place a stepRunner is made, for a real run (session.stepRunner) and a
// dry run (dryRun) alike, so the dry run's commands are those the real one makes.
func newStepRunner(opts Options, plan *scenario.Plan, c stepSetup) *stepRunner {
	return &stepRunner{eng: c.eng, m: c.m, steps: c.steps, scenario: plan.Scenario.Name, runID: c.runID,
		resultDir: c.resultDir, rawMount: "/raw", promURL: c.promURL, log: c.m.Log,
		missingTools: c.missing, project: opts.Project}
}

// Flags the runner sets on a run whose server or tool failed it. They sit beside the flags of
// package record and print like them.
const (
	FlagServerFault = "server-fault" // the server was OOM-killed, crashed or restarted during the run
	FlagTimeout     = "timeout"      // the tool did not finish within warm-up + duration + margin
)

// toolLimit is how long a tool may take: its warm-up and measured duration, plus a margin for
// container start-up and the tool's own teardown, which grows with the run.
func toolLimit(warmup, duration time.Duration) time.Duration {
	return warmup + duration + 15*time.Second + (warmup+duration)/4
}

// serverRef is the server container of the run in progress.
type serverRef struct {
	service string
	id      string
}

// serverHealthTimeout bounds a server's start. The Python server imports grpcio, which is slow
// on a capped core, so it is generous.
const serverHealthTimeout = 90 * time.Second

// run carries out one planned run and returns its record. Its containers carry the step's
// labels and the step's series go to Prometheus (stepinfo) around it. Whatever happened, the
// server it started is inspected (an OOM kill or a crash becomes the record's error and
// FlagServerFault), its log is kept in raw/, and it is removed.
func (s *stepRunner) run(ctx context.Context, plan *scenario.Plan, r scenario.Run) record.Record {
	st := stepinfo.Step{RunID: s.runID, Scenario: s.scenario, Step: r.Step, Repeat: r.Repeat, Target: r.Target, Tool: r.Tool}
	s.labels = st.ComposeEnv()
	defer func() { s.labels = nil }()
	if s.steps != nil {
		s.steps.Begin(ctx, st)
	}
	var srv serverRef
	rec := s.measure(ctx, plan, r, &srv)
	// Interrupted: the teardown removes every container of the project at once, within its own
	// deadline, instead of this run's server taking its time alone.
	if srv.service != "" && ctx.Err() == nil {
		if srv.id != "" {
			s.diagnoseServer(ctx, &rec, r, srv)
		}
		s.m.Note(r, rec)
		// A fresh server per run: stopping it here keeps one run's heap and connections out of
		// the next, and frees the server core for the cooldown.
		if err := s.eng.Remove(context.WithoutCancel(ctx), srv.service); err != nil {
			s.log("warning: removing %s: %v", srv.service, err)
		}
	}
	if s.steps != nil {
		// An interrupted run still ends its step_info series, so no region stays open.
		s.steps.Finish(context.WithoutCancel(ctx), st, rec)
	}
	return rec
}

// failed marks rec as failed by err.
func failed(rec record.Record, err error) record.Record {
	rec.Error = err.Error()
	rec.Flags = append(rec.Flags, record.FlagFailed)
	return rec
}

// measure is one run from its server's start to its figures: the server, the observability
// stack's place, the warm-up beside the wait for cAdvisor, the tool, its output, and the
// measured window's usage.
func (s *stepRunner) measure(ctx context.Context, plan *scenario.Plan, r scenario.Run, srv *serverRef) record.Record {
	rec := results.FromRun(plan, r)
	rec.DurationS = 0 // the tool reports the window it really measured
	adapter, inv, ep, err := s.invocation(r)
	if err != nil {
		return failed(rec, err)
	}
	if err := s.startServer(ctx, ep, r, srv); err != nil {
		return failed(rec, err)
	}
	s.m.Place(ctx, adapter, r, &rec)
	seenBy := s.m.WaitSeen(ctx, srv.id, ep.Service, r)
	clientEnv := clientEnvironment(r)
	if adapter.OwnWarmup() {
		inv.Warmup = r.Warmup
	} else if r.Warmup > 0 {
		if err := s.warmUp(ctx, adapter, inv, clientEnv, r, &rec); err != nil {
			return failed(rec, err)
		}
	}
	if err := s.writeInputs(adapter, inv); err != nil {
		return failed(rec, err)
	}
	seenBy()
	count := s.startServerCount(ctx, ep, r, inv)
	t, stdout, stderr, code, err := s.runTool(ctx, adapter, inv, clientEnv, r, &rec)
	if err != nil {
		return failed(rec, err)
	}
	count.read(ctx)
	files, names := s.collectFiles(r.ID)
	rec.RawFiles = append(rec.RawFiles, names...)
	parsed, perr := adapter.Parse(inv, tool.Raw{Stdout: stdout, Stderr: stderr, Files: files})
	if perr != nil {
		msg := fmt.Sprintf("parse %s output: %v", r.Tool, perr)
		if code != 0 {
			msg = fmt.Sprintf("%s exited with %d (%s); %s", r.Tool, code, stderrLine(stderr), msg)
		}
		return failed(rec, fmt.Errorf("%s", msg))
	}
	mergeMeasured(&rec, parsed)
	count.apply(&rec)
	if code != 0 && rec.Error == "" {
		// Partial results are still results: keep them, and say the tool did not end cleanly.
		rec.Error = fmt.Sprintf("%s exited with %d: %s", r.Tool, code, stderrLine(stderr))
	}
	t.Parsed, t.Server, t.Client = parsed, ep.Service, adapter.Service()
	s.toolEnded = t.Ended
	// Interrupted while waiting for the metrics: no CPU reading, and execute keeps the record
	// without counting it done.
	s.m.Read(ctx, &rec, r, t)
	return rec
}

// invocation resolves a run's target and tool, and checks that the tool can run the step here.
func (s *stepRunner) invocation(r scenario.Run) (tool.Adapter, tool.Invocation, endpoint, error) {
	ep, err := endpointFor(r)
	if err != nil {
		return nil, tool.Invocation{}, ep, err
	}
	adapter, ok := tool.Lookup(r.Tool)
	if !ok {
		return nil, tool.Invocation{}, ep, fmt.Errorf("tool %q has no adapter in this build", r.Tool)
	}
	inv := tool.Invocation{
		Target: r.Target, Address: ep.address(), Scheme: ep.Scheme, Method: r.Method, Pattern: r.Pattern,
		Model: r.Model, Connections: r.Connections, Concurrency: r.Concurrency, RatePerSec: r.Rate,
		PayloadBytes: r.PayloadBytes, HTTPVersion: r.HTTPVersion, Encoding: r.Encoding,
		Duration: r.Duration, RawDir: s.rawMount, RawPrefix: r.ID,
		Labels:        map[string]string{"scenario": s.scenario, "step": r.Step, "run_id": s.runID},
		PrometheusURL: s.promURL,
	}
	inv.RequestsPerConnection = r.RequestsPerConnection
	inv.Compression = r.Compression
	if r.TLS {
		inv.CAFile, inv.ServerName = targets.TLSMount+"/"+tlscert.CAFile, r.Target
		inv.HostCAFile = filepath.Join(s.resultDir, filepath.FromSlash(tlsCADirName), tlscert.CAFile)
	}
	if inv.Request, err = s.customRequest(r); err != nil {
		return nil, inv, ep, err
	}
	if err := adapter.Check(inv); err != nil {
		return nil, inv, ep, fmt.Errorf("%s cannot run this step: %w", r.Tool, err)
	}
	if err := tool.CheckCompression(r.Tool, adapter.Capabilities(), inv); err != nil {
		return nil, inv, ep, fmt.Errorf("%s cannot run this step: %w", r.Tool, err)
	}
	if why, missing := s.missingTools[r.Tool]; missing {
		return nil, inv, ep, fmt.Errorf("%s cannot run here: %s", r.Tool, why)
	}
	return adapter, inv, ep, nil
}

// startServer starts the run's fresh server and waits until it is healthy; srv says which
// container it is, for the diagnosis after the run, even when it did not start.
func (s *stepRunner) startServer(ctx context.Context, ep endpoint, r scenario.Run, srv *serverRef) error {
	srv.service = ep.Service
	err := s.eng.Recreate(ctx, ep.Service, withEnv(serverEnvironment(r), s.labels))
	if id, idErr := s.eng.ContainerID(ctx, ep.Service); idErr == nil {
		srv.id = id
	}
	if err != nil {
		return fmt.Errorf("start %s: %w", ep.Service, err)
	}
	if err := s.eng.WaitHealthy(ctx, ep.Service, serverHealthTimeout); err != nil {
		return fmt.Errorf("%s did not become healthy: %w", ep.Service, err)
	}
	return nil
}

// warmUp runs the tool for the warm-up, for a tool that has no warm-up of its own.
func (s *stepRunner) warmUp(ctx context.Context, adapter tool.Adapter, inv tool.Invocation, clientEnv map[string]string, r scenario.Run, rec *record.Record) error {
	warm := inv
	warm.Duration = r.Warmup
	warm.RawPrefix = r.ID + ".warmup"
	if err := s.writeInputs(adapter, warm); err != nil {
		return err
	}
	o := s.oneOff(adapter, clientEnv, warm)
	o.Limit = toolLimit(0, r.Warmup)
	stdout, stderr, _, err := s.eng.Run(ctx, o)
	rec.RawFiles = append(rec.RawFiles, s.saveRaw(warm.RawPrefix, adapter.Name(), stdout, stderr)...)
	if err != nil {
		if timedOut(ctx, err) {
			rec.AddFlag(FlagTimeout)
			return fmt.Errorf("timeout: the %s warm-up did not finish within %s; its container was removed", r.Tool, o.Limit)
		}
		return fmt.Errorf("warm-up with %s: %w", r.Tool, err)
	}
	return nil
}

// runTool runs the measured tool and keeps its output in raw/. The ToolRun it returns has the
// tool's start and end: the container's own when the engine reports them, else the runner's
// clock around the run.
func (s *stepRunner) runTool(ctx context.Context, adapter tool.Adapter, inv tool.Invocation, clientEnv map[string]string, r scenario.Run, rec *record.Record) (measure.ToolRun, []byte, []byte, int, error) {
	t := measure.ToolRun{Started: time.Now(), Warmup: inv.Warmup}
	o := s.oneOff(adapter, clientEnv, inv)
	o.Limit = toolLimit(inv.Warmup, r.Duration)
	var window [2]time.Time
	o.Window = &window
	stdout, stderr, code, err := s.eng.Run(ctx, o)
	t.Ended = time.Now()
	if !window[0].IsZero() && window[1].After(window[0]) {
		t.Started, t.Ended, t.Lifetime = window[0], window[1], true
	}
	rec.RawFiles = append(rec.RawFiles, s.saveRaw(r.ID, adapter.Name(), stdout, stderr)...)
	if err != nil {
		if timedOut(ctx, err) {
			rec.AddFlag(FlagTimeout)
			return t, nil, nil, code, fmt.Errorf("timeout: %s did not finish within %s (warm-up + duration + margin); its container was removed", r.Tool, o.Limit)
		}
		return t, nil, nil, code, fmt.Errorf("run %s: %w", r.Tool, err)
	}
	return t, stdout, stderr, code, nil
}
