package runner

import (
	"context"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/protobench/protobench/internal/compose"
	"github.com/protobench/protobench/internal/record"
	"github.com/protobench/protobench/internal/results"
	"github.com/protobench/protobench/internal/scenario"
	"github.com/protobench/protobench/internal/targets"
	"github.com/protobench/protobench/internal/tool"
)

// Stack is what the runner needs from the container orchestrator (the compose CLI), kept narrow
// so the step logic reads as the flow in DESIGN.md.
type Stack interface {
	// Recreate starts a fresh container of service with extra environment for the compose file.
	Recreate(ctx context.Context, service string, env map[string]string) error
	WaitHealthy(ctx context.Context, service string, timeout time.Duration) error
	// ContainerID is the ID of service's current container.
	ContainerID(ctx context.Context, service string) (string, error)
	// Run runs a one-off container and returns its output and exit code.
	Run(ctx context.Context, spec OneOff) (stdout, stderr []byte, exitCode int, err error)
	Remove(ctx context.Context, service string) error
	// Inspect and Logs read a container after its run, to diagnose a server that died.
	Inspect(ctx context.Context, id string) (compose.ContainerState, error)
	Logs(ctx context.Context, id string) ([]byte, error)
}

// OneOff is a run-once tool container.
type OneOff struct {
	Service    string
	Name       string // container name, fixed so Prometheus can find live metrics by it
	Entrypoint string // empty: the image's own
	Env        map[string]string
	Args       []string
	// Limit bounds the whole run: warm-up + duration + a margin. A tool still running then
	// (hung, paused) is stopped and its container removed.
	Limit time.Duration
	// Inputs are the files under raw/ the tool reads (tool.InputFiler), by base name: a stack
	// whose tools cannot mount raw/ (swarm) hands them over itself.
	Inputs []string
	// Parts, when set, divides the tool's load among n generators (several client nodes of a
	// swarm): each part's arguments, and merge, which turns the parts' files (by base name)
	// into the files one generator would have written. nil: the tool's load cannot be split.
	Parts func(n int) (args [][]string, merge func(files map[string][]byte) (map[string][]byte, error), err error)
	// Window, when set, receives when the tool itself started and ended, from a stack whose
	// Run takes noticeably longer than the tool (a swarm job is scheduled, then hands its
	// output back); left zero, the caller's clock around Run stands.
	Window *[2]time.Time
}

// Meter reads what cAdvisor saw of a service over a window.
type Meter interface {
	Usage(ctx context.Context, service string, start, end time.Time) (containerUsage, error)
	// WaitSeen waits until the container's CPU series is in Prometheus, so the measured window
	// is covered from its first second.
	WaitSeen(ctx context.Context, containerID string, timeout time.Duration) error
}

// stepRunner runs one planned run: fresh server, warm-up, measurement, usage, teardown.
type stepRunner struct {
	stack     Stack
	meter     Meter
	scenario  string
	runID     string
	resultDir string // host path of the results folder; raw/ lives inside
	rawMount  string // where raw/ is mounted in tool containers
	promURL   string // Prometheus as tool containers see it, for tools that push metrics
	settle    time.Duration
	// toolEnded is when the last run's tool finished: the time since then counts toward the
	// cool-down, so waiting for the metrics does not add to it.
	toolEnded time.Time
	log       func(format string, args ...any)
	// missingTools maps a tool to why it cannot run on this machine.
	missingTools map[string]string
	project      string // compose project: tool containers are named after it

	// placer moves the observability stack (the services observability) to where each run
	// wants it (layout.StackCPUSet); stackAt is where it sits now. nil where the stack cannot
	// be moved (swarm sets no cpusets).
	placer        stackPlacer
	layout        scenario.Layout
	observability []string
	stackAt       string
	// hostCores says the layout's cpusets are cores of this host (compose), so that the
	// host's per-core time describes the server's and the tools' cores; not so under swarm.
	hostCores bool
	// lastUsage is what each cell's latest repeat measured, so that its next repeat places the
	// stack by what the tool did rather than by what the tool declares.
	lastUsage map[cellKey]cellUsage
}

// cellKey is a cell of a step: its runs differ only by repeat.
type cellKey struct{ step, target, tool string }

// cellUsage is what a repeat measured: whether its tool filled its core (record.ToolFilledItsCore),
// and each side's CPU as a percentage of its cap, for the log.
type cellUsage struct {
	repeat               int
	filled               bool
	clientPct, serverPct float64
}

// stackPlacer is an orchestrator that can move the observability containers between cores
// while a run goes on.
type stackPlacer interface {
	PlaceStack(ctx context.Context, services []string, cpuset string) error
}

// placeStack puts the observability stack where this run's tool leaves room for it, before the
// tool's warm-up so that the move is not measured. A failed move is a warning: the stack stays
// where it was, and the record says where that is.
func (s *stepRunner) placeStack(ctx context.Context, a tool.Adapter, r scenario.Run, rec *record.Record) {
	if s.placer == nil {
		return
	}
	bound, why := s.clientBound(a, r)
	want := s.layout.StackCPUSet(bound)
	if want != s.stackAt {
		if err := s.placer.PlaceStack(ctx, s.observability, want); err != nil {
			s.log("warning: moving the observability stack to cpuset %s for %s: %v", want, a.Name(), err)
		} else {
			s.log("observability stack on cpuset %s for %s (%s; %s)", want, a.Name(), stackReason(s.layout, want), why)
			s.stackAt = want
		}
	}
	rec.ObservabilityCPUSet = s.stackAt
}

// clientBound says whether the run's tool will fill its core while the server's has room. The
// cell's previous repeat decides when there was one (record.ToolFilledItsCore). Before that, the tool's declared capability does (k6
// and ghz spend more CPU per request than the servers), which a step can belie both ways: wrk on
// many connections fills its core, and k6 at a low open-model rate does not.
func (s *stepRunner) clientBound(a tool.Adapter, r scenario.Run) (bool, string) {
	if u, ok := s.lastUsage[cellKey{r.Step, r.Target, r.Tool}]; ok {
		return u.filled, fmt.Sprintf("repeat %d measured %s at %.0f %% of its CPU cap, the server at %.0f %%", u.repeat, r.Tool, u.clientPct, u.serverPct)
	}
	if a.Capabilities().ClientBound {
		return true, "declared client-bound"
	}
	return false, "not declared client-bound"
}

// noteUsage keeps what a finished run measured for its cell's next repeat. A failed run, or
// one without both sides' CPU (a server of the user's own, metrics missing), decides nothing.
func (s *stepRunner) noteUsage(r scenario.Run, rec record.Record) {
	filled, known := rec.ToolFilledItsCore()
	if !known {
		return
	}
	if s.lastUsage == nil {
		s.lastUsage = map[cellKey]cellUsage{}
	}
	s.lastUsage[cellKey{r.Step, r.Target, r.Tool}] = cellUsage{r.Repeat, filled, rec.ClientCPUPercentOfCap, rec.ServerCPUPercentOfCap}
}

func stackReason(l scenario.Layout, cpuset string) string {
	if cpuset == l.ServerCPUSet && cpuset != l.ObservabilityCPUSet {
		return "a client-bound tool: the server's core has the room"
	}
	return "the layout's place for it"
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

// containerSeenTimeout bounds the wait for cAdvisor to report a new container; it does so within
// a couple of housekeeping intervals (1 s) plus a scrape (1 s) when healthy.
const containerSeenTimeout = 20 * time.Second

// run carries out one planned run and returns its record. Whatever happened, the server it
// started is inspected (an OOM kill or a crash becomes the record's error and FlagServerFault),
// its log is kept in raw/, and it is removed.
func (s *stepRunner) run(ctx context.Context, plan *scenario.Plan, r scenario.Run) record.Record {
	var srv serverRef
	rec := s.measure(ctx, plan, r, &srv)
	if srv.service == "" || ctx.Err() != nil {
		// Interrupted: the teardown removes every container of the project at once, within its
		// own deadline, instead of this run's server taking its time alone.
		return rec
	}
	if srv.id != "" {
		s.diagnoseServer(ctx, &rec, r, srv)
	}
	s.noteUsage(r, rec)
	// A fresh server per run: stopping it here keeps one run's heap and connections out of the
	// next, and frees the server core for the cooldown.
	if err := s.stack.Remove(context.WithoutCancel(ctx), srv.service); err != nil {
		s.log("warning: removing %s: %v", srv.service, err)
	}
	return rec
}

func (s *stepRunner) measure(ctx context.Context, plan *scenario.Plan, r scenario.Run, srv *serverRef) record.Record {
	rec := results.FromRun(plan, r)
	rec.DurationS = 0 // the tool reports the window it really measured
	fail := func(err error) record.Record {
		rec.Error = err.Error()
		rec.Flags = append(rec.Flags, record.FlagFailed)
		return rec
	}
	ep, err := endpointFor(r)
	if err != nil {
		return fail(err)
	}
	adapter, ok := tool.Lookup(r.Tool)
	if !ok {
		return fail(fmt.Errorf("tool %q has no adapter in this build", r.Tool))
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
	if r.TLS {
		inv.CAFile, inv.ServerName = targets.TLSMount+"/ca.pem", r.Target
	}
	if inv.Request, err = s.customRequest(r); err != nil {
		return fail(err)
	}
	if err := adapter.Check(inv); err != nil {
		return fail(fmt.Errorf("%s cannot run this step: %w", r.Tool, err))
	}
	if why, missing := s.missingTools[r.Tool]; missing {
		return fail(fmt.Errorf("%s cannot run here: %s", r.Tool, why))
	}

	serverEnv := serverEnvironment(r)
	srv.service = ep.Service
	err = s.stack.Recreate(ctx, ep.Service, serverEnv)
	if id, idErr := s.stack.ContainerID(ctx, ep.Service); idErr == nil {
		srv.id = id
	}
	if err != nil {
		return fail(fmt.Errorf("start %s: %w", ep.Service, err))
	}
	if err := s.stack.WaitHealthy(ctx, ep.Service, serverHealthTimeout); err != nil {
		return fail(fmt.Errorf("%s did not become healthy: %w", ep.Service, err))
	}
	s.placeStack(ctx, adapter, r, &rec)

	// cAdvisor must report the server before the measured window opens, or the window's first
	// seconds lack its CPU. A warm-up of a couple of seconds covers the wait (a housekeeping
	// interval plus a scrape), so the wait runs beside it instead of before it.
	seen := make(chan error, 1)
	switch {
	case srv.id == "":
		s.log("warning: no container ID for %s: its CPU may be missing from the first seconds", ep.Service)
		seen <- nil
	case r.Warmup >= overlapSeenWarmup:
		go func() { seen <- s.meter.WaitSeen(ctx, srv.id, containerSeenTimeout) }()
	default:
		seen <- s.meter.WaitSeen(ctx, srv.id, containerSeenTimeout)
	}
	seenBy := func() {
		if err := <-seen; err != nil {
			s.log("warning: %s: %v", r.ID, err)
		}
	}

	clientEnv := clientEnvironment(r)
	if adapter.OwnWarmup() {
		inv.Warmup = r.Warmup
	} else if r.Warmup > 0 {
		warm := inv
		warm.Duration = r.Warmup
		warm.RawPrefix = r.ID + ".warmup"
		if err := s.writeInputs(adapter, warm); err != nil {
			return fail(err)
		}
		o := s.oneOff(adapter, clientEnv, warm)
		o.Limit = toolLimit(0, r.Warmup)
		stdout, stderr, _, err := s.stack.Run(ctx, o)
		rec.RawFiles = append(rec.RawFiles, s.saveRaw(warm.RawPrefix, adapter.Name(), stdout, stderr)...)
		if err != nil {
			if timedOut(ctx, err) {
				rec.Flags = appendFlag(rec.Flags, FlagTimeout)
				return fail(fmt.Errorf("timeout: the %s warm-up did not finish within %s; its container was removed", r.Tool, o.Limit))
			}
			return fail(fmt.Errorf("warm-up with %s: %w", r.Tool, err))
		}
	}

	if err := s.writeInputs(adapter, inv); err != nil {
		return fail(err)
	}
	seenBy()
	started := time.Now()
	o := s.oneOff(adapter, clientEnv, inv)
	o.Limit = toolLimit(inv.Warmup, r.Duration)
	var window [2]time.Time
	o.Window = &window
	stdout, stderr, code, err := s.stack.Run(ctx, o)
	ended := time.Now()
	lifetime := !window[0].IsZero() && window[1].After(window[0])
	if lifetime {
		started, ended = window[0], window[1]
	}
	rec.RawFiles = append(rec.RawFiles, s.saveRaw(r.ID, adapter.Name(), stdout, stderr)...)
	if err != nil {
		if timedOut(ctx, err) {
			rec.Flags = appendFlag(rec.Flags, FlagTimeout)
			return fail(fmt.Errorf("timeout: %s did not finish within %s (warm-up + duration + margin); its container was removed", r.Tool, o.Limit))
		}
		return fail(fmt.Errorf("run %s: %w", r.Tool, err))
	}
	files, names := s.collectFiles(r.ID)
	rec.RawFiles = append(rec.RawFiles, names...)
	parsed, perr := adapter.Parse(inv, tool.Raw{Stdout: stdout, Stderr: stderr, Files: files})
	if perr != nil {
		msg := fmt.Sprintf("parse %s output: %v", r.Tool, perr)
		if code != 0 {
			msg = fmt.Sprintf("%s exited with %d (%s); %s", r.Tool, code, stderrLine(stderr), msg)
		}
		return fail(fmt.Errorf("%s", msg))
	}
	mergeMeasured(&rec, parsed)
	if code != 0 && rec.Error == "" {
		// Partial results are still results: keep them, and say the tool did not end cleanly.
		rec.Error = fmt.Sprintf("%s exited with %d: %s", r.Tool, code, stderrLine(stderr))
	}

	windowStart, windowEnd := measuredWindow(parsed, started, ended)
	if lifetime {
		windowStart, windowEnd = lifetimeWindow(parsed, started, ended, inv.Warmup)
	}
	rec.StartUnix = float64(windowStart.UnixNano()) / 1e9
	rec.EndUnix = float64(windowEnd.UnixNano()) / 1e9

	s.toolEnded = ended
	// Prometheus scrapes every second and cAdvisor refreshes every second: wait for the samples
	// that cover the end of the window before asking for them. The wait counts as cool-down
	// (execute subtracts it), since nothing runs meanwhile.
	if err := s.waitCovered(ctx, ep.Service, windowEnd); err != nil {
		if ctx.Err() != nil {
			// Interrupted: no CPU reading, and execute keeps the record without counting it done.
			return rec
		}
		s.log("warning: %s: %v", r.ID, err)
	}
	s.addUsage(ctx, &rec, r, ep.Service, adapter.Service(), windowStart, windowEnd)
	s.addCores(ctx, &rec, r, windowStart, windowEnd)
	s.addTLS(ctx, &rec, r, windowStart, windowEnd)
	s.addOthers(ctx, &rec, r, ep.Service, adapter.Service(), windowStart, windowEnd)
	return rec
}

// overlapSeenWarmup is the shortest warm-up that the wait for cAdvisor may run beside.
const overlapSeenWarmup = 2 * time.Second

// coreMeter is a Meter that can tell how host CPUs spent a window.
type coreMeter interface {
	Cores(ctx context.Context, cpuset string, start, end time.Time) (*record.CoreTime, error)
}

// addCores records how the server's cores and the tools' spent the window, where the layout's
// cpusets are cores of this host (compose, not swarm) and the two sides do not share them.
func (s *stepRunner) addCores(ctx context.Context, rec *record.Record, r scenario.Run, start, end time.Time) {
	cm, ok := s.meter.(coreMeter)
	if !ok || !s.hostCores || r.Layout.Shared || r.Layout.ServerCPUSet == "" || r.Layout.ClientCPUSet == "" {
		return
	}
	for _, side := range []struct {
		name, cpuset string
		dst          **record.CoreTime
	}{
		{"server", r.Layout.ServerCPUSet, &rec.ServerCores},
		{"client", r.Layout.ClientCPUSet, &rec.ClientCores},
	} {
		ct, err := cm.Cores(ctx, side.cpuset, start, end)
		if err != nil {
			s.log("warning: how the %s's cores (cpuset %s) spent %s: %v", side.name, side.cpuset, r.ID, err)
			continue
		}
		*side.dst = ct
	}
	if rec.ServerCores == nil {
		return
	}
	if rec.ObservabilityCPUSet != "" && cpusetsOverlap(rec.ObservabilityCPUSet, r.Layout.ServerCPUSet) {
		obs, err := s.stackCPUSeconds(ctx, start, end)
		if err != nil {
			s.log("warning: the observability stack's CPU on the server's cores during %s: %v", r.ID, err)
		}
		chargeStack(rec.ServerCores, obs, end.Sub(start), r.Layout.ServerCPUSet)
	}
	if rec.Requests > 0 {
		rec.ServerCoreMicrosPerRequest = math.Round(1e3*(rec.ServerCores.BusySeconds-rec.ServerCores.ObservabilitySeconds)*1e6/float64(rec.Requests)) / 1e3
	}
}

// stackMeter is a Meter that can read the observability stack's containers, which carry no
// run's label.
type stackMeter interface {
	StackUsage(ctx context.Context, service string, start, end time.Time) (containerUsage, error)
}

// stackCPUSeconds is the observability stack's container CPU over [start, end].
func (s *stepRunner) stackCPUSeconds(ctx context.Context, start, end time.Time) (float64, error) {
	sm, ok := s.meter.(stackMeter)
	if !ok {
		return 0, nil
	}
	var total float64
	var errs []error
	for _, svc := range s.observability {
		u, err := sm.StackUsage(ctx, svc, start, end)
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", svc, err))
			continue
		}
		total += u.CPUSeconds
	}
	return total, errors.Join(errs...)
}

// chargeStack takes the observability stack's CPU-seconds (obs, measured while it shared the
// server's cores) out of the cores' busy share: that work is the benchmark's, not the server's.
func chargeStack(ct *record.CoreTime, obs float64, window time.Duration, cpuset string) {
	cpus, err := scenario.ParseCPUSet(cpuset)
	if err != nil || len(cpus) == 0 || window <= 0 || obs <= 0 {
		return
	}
	obs = min(obs, ct.BusySeconds)
	ct.ObservabilitySeconds = math.Round(1e6*obs) / 1e6
	capacity := window.Seconds() * float64(len(cpus))
	ct.BusyPercent = math.Max(0, math.Round(10*(ct.BusyPercent-100*obs/capacity))/10)
}

// cpusetsOverlap reports whether two cpuset strings share a CPU.
func cpusetsOverlap(a, b string) bool {
	as, err1 := scenario.ParseCPUSet(a)
	bs, err2 := scenario.ParseCPUSet(b)
	if err1 != nil || err2 != nil {
		return false
	}
	for _, x := range as {
		for _, y := range bs {
			if x == y {
				return true
			}
		}
	}
	return false
}

// othersMeter is a Meter that can tell the CPU that processes spent on host CPUs, and our
// containers' CPU, so that the rest is what other processes used.
type othersMeter interface {
	Busy(ctx context.Context, cpuset string, start, end time.Time) (float64, error)
	ServicesCPU(ctx context.Context, services []string, start, end time.Time) (float64, error)
}

// addOthers records, beside each side's core time, the share of its cores that processes
// other than ours used: the cores' process time less the CPU of our containers pinned there
// (the server on the server's cores, the tool on the tool's, the observability stack where it
// sat). Only where addCores measured the cores: on swarm the cpusets are not this host's.
func (s *stepRunner) addOthers(ctx context.Context, rec *record.Record, r scenario.Run, serverService, toolService string, start, end time.Time) {
	om, ok := s.meter.(othersMeter)
	if !ok || rec.ServerCores == nil && rec.ClientCores == nil {
		return
	}
	stackAt := rec.ObservabilityCPUSet
	if stackAt == "" {
		stackAt = r.Layout.ObservabilityCPUSet
	}
	for _, side := range []struct {
		name, cpuset, service string
		ct                    *record.CoreTime
	}{
		{"server", r.Layout.ServerCPUSet, serverService, rec.ServerCores},
		{"client", r.Layout.ClientCPUSet, toolService, rec.ClientCores},
	} {
		if side.ct == nil {
			continue
		}
		cpus, err := scenario.ParseCPUSet(side.cpuset)
		if err != nil {
			continue
		}
		services := []string{side.service}
		if stackAt == side.cpuset {
			services = append(services, observabilityServices...)
			services = append(services, "grafana")
		}
		busy, err := om.Busy(ctx, side.cpuset, start, end)
		if err == nil {
			var ours float64
			if ours, err = om.ServicesCPU(ctx, services, start, end); err == nil {
				v := othersPercent(busy, ours, len(cpus), end.Sub(start))
				side.ct.OthersPercent = &v
				continue
			}
		}
		s.log("warning: what other processes used of the %s's cores (cpuset %s) during %s: %v", side.name, side.cpuset, r.ID, err)
	}
}

// coverWaiter is a Meter that can tell when the samples covering a window's end are stored.
type coverWaiter interface {
	WaitCovered(ctx context.Context, service string, end time.Time, timeout time.Duration) error
}

// waitCovered waits until Prometheus holds the server's samples up to end, or the settle time
// for a Meter that cannot tell.
func (s *stepRunner) waitCovered(ctx context.Context, service string, end time.Time) error {
	if cw, ok := s.meter.(coverWaiter); ok {
		return cw.WaitCovered(ctx, service, end, s.settle+2*time.Second)
	}
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-time.After(s.settle):
		return nil
	}
}

// timedOut tells a tool run that hit its own limit from one the caller cancelled.
func timedOut(ctx context.Context, err error) bool {
	return ctx.Err() == nil && errors.Is(err, context.DeadlineExceeded)
}

// diagnoseServer inspects the run's server container after the run: an OOM kill, an exit or a
// restart becomes the record's error (before any other) and FlagServerFault; the measured
// figures stay. The server's log goes to raw/ in every case.
func (s *stepRunner) diagnoseServer(ctx context.Context, rec *record.Record, r scenario.Run, srv serverRef) {
	ctx = context.WithoutCancel(ctx)
	if logs, err := s.stack.Logs(ctx, srv.id); err == nil || len(logs) > 0 {
		name := filepath.Join("raw", r.ID+".server."+srv.service+".log")
		if err := results.WriteFileAtomic(filepath.Join(s.resultDir, name), logs); err != nil {
			s.log("warning: keeping the server log: %v", err)
		} else {
			rec.RawFiles = append(rec.RawFiles, name)
		}
	}
	st, err := s.stack.Inspect(ctx, srv.id)
	if err != nil {
		s.log("warning: inspecting %s after %s: %v", srv.service, r.ID, err)
		return
	}
	fault := serverFault(st, srv.service)
	if fault == "" {
		return
	}
	if rec.Error != "" {
		fault += "; " + rec.Error
	}
	rec.Error = fault
	rec.Flags = appendFlag(rec.Flags, FlagServerFault)
}

// serverFault describes what went wrong with a server container, or "" when nothing did.
func serverFault(st compose.ContainerState, service string) string {
	switch {
	case st.OOMKilled:
		if st.MemoryLimit > 0 {
			return fmt.Sprintf("server %s OOM-killed at its %s cap", service, formatMiB(st.MemoryLimit))
		}
		return fmt.Sprintf("server %s OOM-killed", service)
	case st.Status == "exited" || st.Status == "dead":
		return fmt.Sprintf("server %s exited with code %d during the run", service, st.ExitCode)
	case st.RestartCount > 0:
		return fmt.Sprintf("server %s restarted %d times during the run", service, st.RestartCount)
	}
	return ""
}

func formatMiB(b int64) string {
	if b%(1<<20) == 0 {
		return fmt.Sprintf("%d MiB", b>>20)
	}
	return fmt.Sprintf("%.1f MiB", float64(b)/(1<<20))
}

// measuredWindow is the interval the tool measured. A tool that reports its own window (our
// generator does) is believed when it lies within the container's lifetime; otherwise the window
// is the tail of the container's run, of the length the tool reports, since a tool's warm-up and
// start-up come first.
func measuredWindow(parsed record.Record, started, ended time.Time) (time.Time, time.Time) {
	slack := time.Second
	if parsed.StartUnix > 0 && parsed.EndUnix > parsed.StartUnix {
		s := time.Unix(0, int64(parsed.StartUnix*1e9))
		e := time.Unix(0, int64(parsed.EndUnix*1e9))
		if !s.Before(started.Add(-slack)) && !e.After(ended.Add(slack)) {
			return s, e
		}
	}
	start := ended.Add(-time.Duration(parsed.DurationS * float64(time.Second)))
	if parsed.DurationS <= 0 || start.Before(started) {
		start = started
	}
	return start, ended
}

// lifetimeWindow is the interval the tool measured when its container's own start and finish
// are known: the tool's own window when it reports one within that lifetime, otherwise the
// reported duration counted from the container's start plus the tool's own warm-up. Counting
// from the start, not back from the finish, keeps a tool that takes its time to stop (writing
// its report, a slow exit) from shifting the window into idle time, which would read the
// server's and the tool's CPU low and could flag unsaturated wrongly.
func lifetimeWindow(parsed record.Record, started, finished time.Time, warmup time.Duration) (time.Time, time.Time) {
	slack := time.Second
	if parsed.StartUnix > 0 && parsed.EndUnix > parsed.StartUnix {
		s := time.Unix(0, int64(parsed.StartUnix*1e9))
		e := time.Unix(0, int64(parsed.EndUnix*1e9))
		if !s.Before(started.Add(-slack)) && !e.After(finished.Add(slack)) {
			return s, e
		}
	}
	start := started.Add(warmup)
	if !start.Before(finished) {
		start = started
	}
	end := finished
	if d := time.Duration(parsed.DurationS * float64(time.Second)); d > 0 && start.Add(d).Before(finished) {
		end = start.Add(d)
	}
	return start, end
}

// addUsage fills the server and client CPU fields and the flags that depend on them.
func (s *stepRunner) addUsage(ctx context.Context, rec *record.Record, r scenario.Run, serverService, clientService string, start, end time.Time) {
	window := end.Sub(start).Seconds()
	server, err := s.meter.Usage(ctx, serverService, start, end)
	if err != nil {
		s.log("warning: server usage for %s: %v", r.ID, err)
		return
	}
	if server.Samples == 0 {
		s.log("warning: Prometheus holds no cAdvisor samples for %s during %s", serverService, r.ID)
	}
	rec.ServerCPUSeconds = server.CPUSeconds
	rec.ServerMemMaxBytes = server.MemMaxBytes
	rec.ServerThrottledSeconds = server.ThrottledSeconds
	if window > 0 && r.Caps.ServerCPUs > 0 {
		rec.ServerCPUPercentOfCap = 100 * server.CPUSeconds / window / r.Caps.ServerCPUs
	}
	if rec.Requests > 0 {
		rec.CPUMicrosPerRequest = server.CPUSeconds * 1e6 / float64(rec.Requests)
	}
	// Throttling of a few percent of the window means the quota, not the work, set the pace.
	if window > 0 && server.ThrottledSeconds > 0.05*window {
		rec.Flags = appendFlag(rec.Flags, record.FlagThrottled)
	}
	rec.ServerGOMAXPROCS = server.GOMAXPROCS
	client, err := s.meter.Usage(ctx, clientService, start, end)
	if err != nil {
		s.log("warning: client usage for %s: %v", r.ID, err)
		return
	}
	if window > 0 && r.Caps.ClientCPUs > 0 {
		rec.ClientCPUPercentOfCap = 100 * client.CPUSeconds / window / r.Caps.ClientCPUs
	}
	if rec.ClientCPUPercentOfCap >= record.ClientBoundPercent {
		rec.Flags = appendFlag(rec.Flags, record.FlagClientBound)
	}
}

// mergeMeasured copies the fields a tool measures onto the record the runner set up.
func mergeMeasured(rec *record.Record, m record.Record) {
	rec.DurationS = m.DurationS
	rec.Requests = m.Requests
	rec.Errors = m.Errors
	rec.Incomplete, rec.Unsent = m.Incomplete, m.Unsent
	rec.ThroughputRPS = m.ThroughputRPS
	rec.LatencyMs = m.LatencyMs
	rec.ServiceTimeMs = m.ServiceTimeMs
	rec.Notes = append(rec.Notes, m.Notes...)
	for _, f := range m.Flags {
		rec.Flags = appendFlag(rec.Flags, f)
	}
	if m.Error != "" {
		rec.Error = m.Error
	}
}

func appendFlag(flags []string, f string) []string {
	for _, x := range flags {
		if x == f {
			return flags
		}
	}
	return append(flags, f)
}

// serverEnvironment is the compose interpolation environment for a run's server: caps, cpuset
// and the scenario's knobs.
func serverEnvironment(r scenario.Run) map[string]string {
	env := map[string]string{
		"PROTOBENCH_SERVER_CPUS":   formatCPUs(r.Caps.ServerCPUs),
		"PROTOBENCH_SERVER_CPUSET": r.Layout.ServerCPUSet,
		"PROTOBENCH_SERVER_MEM":    fmt.Sprintf("%d", r.Caps.ServerMemoryBytes),
	}
	for k, v := range r.Env {
		env[k] = v
	}
	if r.TLS {
		// The target's registry entry says how it serves TLS; the certificates are the run's,
		// mounted read-only at targets.TLSMount (prepareTLS).
		t, _ := targets.Lookup(r.Target)
		for k, v := range t.TLSEnv(targets.TLSMount) {
			env[k] = v
		}
	}
	return env
}

// clientEnvironment is the compose interpolation environment for a run's load tool.
func clientEnvironment(r scenario.Run) map[string]string {
	return map[string]string{
		"PROTOBENCH_CLIENT_CPUS":   formatCPUs(r.Caps.ClientCPUs),
		"PROTOBENCH_CLIENT_CPUSET": r.Layout.ClientCPUSet,
		"PROTOBENCH_CLIENT_MEM":    fmt.Sprintf("%d", r.Caps.ClientMemoryBytes),
		// The soft heap limit of a Go tool that collects garbage less often (k6).
		"PROTOBENCH_CLIENT_GOMEMLIMIT": fmt.Sprintf("%d", tool.GoMemLimit(r.Caps.ClientMemoryBytes)),
	}
}

func formatCPUs(c float64) string {
	return strings.TrimRight(strings.TrimRight(fmt.Sprintf("%.3f", c), "0"), ".")
}

// oneOff describes the tool container for one invocation.
func (s *stepRunner) oneOff(a tool.Adapter, env map[string]string, inv tool.Invocation) OneOff {
	o := OneOff{Service: a.Service(), Name: containerName(s.project, a), Env: env, Args: a.Args(inv)}
	if p, ok := a.(tool.Programmer); ok {
		o.Entrypoint = p.Program()
	}
	if f, ok := a.(tool.InputFiler); ok {
		for name := range f.InputFiles(inv) {
			o.Inputs = append(o.Inputs, filepath.Base(name))
		}
		sort.Strings(o.Inputs)
	}
	o.Parts = splitter(a, inv)
	return o
}

// writeInputs puts the files a tool reads (large request bodies) into raw/ before it runs, so
// they are kept with the output they produced.
func (s *stepRunner) writeInputs(a tool.Adapter, inv tool.Invocation) error {
	f, ok := a.(tool.InputFiler)
	if !ok {
		return nil
	}
	for name, data := range f.InputFiles(inv) {
		if err := results.WriteFileAtomic(filepath.Join(s.resultDir, "raw", filepath.Base(name)), data); err != nil {
			return fmt.Errorf("write %s input %s: %w", a.Name(), name, err)
		}
	}
	return nil
}

// containerName is the fixed name of a tool's one-off container, <project>-<service>: unique per
// compose project, so the leftover a crashed run of ours may leave (removed before each run) is
// never another stack's. Prometheus finds the default project's load generator by this name
// (protobench-loadgen) for its live metrics.
func containerName(project string, a tool.Adapter) string {
	if project == "" {
		project = "protobench"
	}
	return project + "-" + a.Service()
}

// saveRaw writes a tool's stdout and stderr untouched and returns their paths under the results
// folder.
func (s *stepRunner) saveRaw(prefix, toolName string, stdout, stderr []byte) []string {
	var names []string
	for suffix, data := range map[string][]byte{"stdout": stdout, "stderr": stderr} {
		name := filepath.Join("raw", fmt.Sprintf("%s.%s.%s", prefix, toolName, suffix))
		if err := results.WriteFileAtomic(filepath.Join(s.resultDir, name), data); err != nil {
			s.log("warning: keeping raw output: %v", err)
			continue
		}
		names = append(names, name)
	}
	sort.Strings(names)
	return names
}

// collectFiles reads the files a tool wrote under raw/ for this run.
func (s *stepRunner) collectFiles(prefix string) (map[string][]byte, []string) {
	matches, _ := filepath.Glob(filepath.Join(s.resultDir, "raw", prefix+"*"))
	files := map[string][]byte{}
	var names []string
	for _, m := range matches {
		base := filepath.Base(m)
		if strings.HasSuffix(base, ".stdout") || strings.HasSuffix(base, ".stderr") || strings.Contains(base, ".warmup") {
			continue
		}
		b, err := os.ReadFile(m)
		if err != nil {
			continue
		}
		files[base] = b
		names = append(names, filepath.Join("raw", base))
	}
	sort.Strings(names)
	return files, names
}

// stderrLine is what a tool said last, for a record's Error: one trimmed line, capped so that a
// tool dumping a long line cannot swamp the message, and never empty.
func stderrLine(stderr []byte) string {
	l := strings.TrimSpace(tool.LastLine(stderr))
	if len(l) > 200 {
		l = l[:200] + "…"
	}
	if l == "" {
		return "no output"
	}
	return l
}
