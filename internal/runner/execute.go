package runner

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/protobench/protobench/internal/hostinfo"
	"github.com/protobench/protobench/internal/hostspeed"
	"github.com/protobench/protobench/internal/images"
	"github.com/protobench/protobench/internal/prom"
	"github.com/protobench/protobench/internal/record"
	"github.com/protobench/protobench/internal/results"
	"github.com/protobench/protobench/internal/scenario"
	"github.com/protobench/protobench/internal/tool"
)

// RunInfo is run.json: everything needed to judge whether two results folders are comparable.
type RunInfo struct {
	RunID          string          `json:"run_id"`
	Scenario       string          `json:"scenario"`
	ScenarioFile   string          `json:"scenario_file"`
	ScenarioSHA256 string          `json:"scenario_sha256"`
	Command        []string        `json:"command"`
	Quick          bool            `json:"quick"`
	Started        time.Time       `json:"started"`
	Finished       *time.Time      `json:"finished,omitempty"`
	Host           hostinfo.Host   `json:"host"`
	ComposeVersion string          `json:"compose_version"`
	Images         []images.Image  `json:"images"`
	Layout         scenario.Layout `json:"cpu_layout"`
	ServerKnobs    map[string]any  `json:"server_knobs"` // per target, as the scenario set them
	Notes          []string        `json:"notes"`
	PrometheusURL  string          `json:"prometheus_url"`
	GrafanaURL     string          `json:"grafana_url,omitempty"`
	ComposeProject string          `json:"compose_project,omitempty"`
	PlanFlags      *PlanFlags      `json:"plan_flags,omitempty"`
	// Engine ran the containers: compose (empty in older folders) or swarm; Swarm describes
	// the swarm's nodes, network and placement.
	Engine string     `json:"engine,omitempty"`
	Swarm  *SwarmInfo `json:"swarm,omitempty"`
	// HostSpeed is the host speed index of the server's and the tools' cores at the start and
	// end of the run, for compare to tell the machine's drift from the code's change.
	HostSpeed *hostspeed.Record `json:"host_speed,omitempty"`
	// Resumes are the later sessions that continued this run; the fields above stay as the
	// first session wrote them.
	Resumes []Resume `json:"resumes,omitempty"`
	// TLS names the run's certificates when a step is TLS.
	TLS *TLSInfo `json:"tls,omitempty"`
}

// environment is what execute needs from the outside world; tests and the CLI fill it.
type environment struct {
	orchestrator   Orchestrator
	composeVersion string
	images         images.Set
	imageEnv       map[string]string
	prometheusURL  string // as the host reaches it; set by locate once the stack is up
	grafanaURL     string // empty when Grafana is unavailable
	observability  []string
	planFlags      PlanFlags
	previous       *RunInfo // run.json of the folder a resume continues
	teardown       *teardown
	// timing, when set, receives how long the runs took against their plan.
	timing *runTiming
	// locate finds Prometheus and Grafana once they run; nil keeps the URLs above. What it
	// found is also stored in located, for the caller.
	locate  func(ctx context.Context) (prometheus, grafana string, err error)
	located *[2]string
	// daemonLost says why Docker is considered gone (nil while it answers).
	daemonLost func() error
	// engine is EngineCompose or EngineSwarm. annotate, when set, adds what the engine knows of
	// a run to its record (where it ran); describe adds the engine's part of run.json at the end.
	engine string
	// measureHost, when set, takes the host speed index (nil in tests that fake the engine, and
	// on a swarm, whose server cores are on another machine).
	measureHost func() (hostspeed.Sample, error)
	annotate    func(rec *record.Record)
	describe    func(ctx context.Context, info *RunInfo)
}

// execute runs a plan in an environment whose images exist, and returns the results folder.
// Whatever stops it (a signal, a full disk, a daemon that stops answering), the records measured
// so far are in the folder when it returns.
func execute(ctx context.Context, opts Options, plan *scenario.Plan, env environment) (string, error) {
	sc := plan.Scenario
	now := time.Now()
	dir := opts.Resume
	var recs []record.Record
	done := map[string]bool{}
	if dir == "" {
		dir = filepath.Join(opts.OutDir, resultsDirName(now, sc.Name))
		if err := os.Mkdir(dir, 0o755); err != nil {
			return "", fmt.Errorf("results folder: %w", err)
		}
	} else {
		var err error
		if recs, done, err = loadFinished(dir); err != nil {
			return "", err
		}
	}
	rawDir := filepath.Join(dir, "raw")
	if err := prepareRawDir(rawDir, env.imageEnv["PROTOBENCH_TOOL_USER"]); err != nil {
		return dir, err
	}
	if err := results.WriteFileAtomic(filepath.Join(dir, results.ScenarioFile), sc.Raw); err != nil {
		return dir, err
	}
	absRaw, err := filepath.Abs(rawDir)
	if err != nil {
		return dir, err
	}
	pf := env.planFlags
	info := RunInfo{
		RunID: filepath.Base(dir), Scenario: sc.Name, ScenarioFile: sc.Path, ScenarioSHA256: sc.Hash(),
		Command: os.Args, Quick: opts.Quick, Started: now.UTC(),
		Host:           hostinfo.Collect(ctx, opts.RepoRoot),
		ComposeVersion: env.composeVersion, Images: env.images.Sorted(), Layout: plan.Layout,
		ServerKnobs: map[string]any{}, Notes: plan.Notes,
		PrometheusURL: env.prometheusURL, GrafanaURL: env.grafanaURL,
		ComposeProject: opts.Project, PlanFlags: &pf, Engine: env.engine,
	}
	info.Host.ComposeVersion = env.composeVersion
	for _, r := range plan.Runs {
		if len(r.Knobs) > 0 {
			info.ServerKnobs[r.Target] = r.Knobs
		}
	}
	resumeIndex := -1
	if env.previous != nil {
		// The first session's metadata stays; this session is appended to it.
		info = *env.previous
		info.Resumes = append(info.Resumes, Resume{Started: now.UTC(), Command: os.Args, Done: len(recs)})
		resumeIndex = len(info.Resumes) - 1
	}
	writeInfo := func() error {
		t := time.Now().UTC()
		if resumeIndex >= 0 {
			info.Resumes[resumeIndex].Finished = &t
		} else {
			info.Finished = &t
		}
		return writeJSON(filepath.Join(dir, results.RunFile), info)
	}
	if err := writeJSON(filepath.Join(dir, results.RunFile), info); err != nil {
		return dir, err
	}
	if env.measureHost != nil && env.previous == nil {
		// Before the observability stack starts, so that nothing of ours runs on the cores.
		info.HostSpeed = &hostspeed.Record{Method: hostspeed.Method, ServerCPUSet: plan.Layout.ServerCPUSet, ClientCPUSet: plan.Layout.ClientCPUSet}
		if s, err := env.measureHost(); err != nil {
			info.HostSpeed.Error = err.Error()
		} else {
			info.HostSpeed.Start = &s
		}
		if err := writeJSON(filepath.Join(dir, results.RunFile), info); err != nil {
			return dir, err
		}
	}
	// From here on, whatever happens, the folder ends with every record measured and a summary.
	finish := func(runErr error) (string, error) {
		if info.HostSpeed != nil && info.HostSpeed.Start != nil && ctx.Err() == nil {
			if s, err := env.measureHost(); err != nil {
				info.HostSpeed.Error = err.Error()
			} else {
				info.HostSpeed.End = &s
			}
		}
		if env.describe != nil && env.previous == nil {
			env.describe(ctx, &info)
		}
		if err := writeInfo(); err != nil && runErr == nil {
			runErr = err
		}
		if err := results.WriteAll(dir, nil, plan, recs); err != nil {
			fmt.Fprintf(opts.Stderr, "protobench: writing the summary: %v\n", err)
			if runErr == nil {
				runErr = err
			}
		}
		if len(recs) > 0 {
			fmt.Fprintln(opts.Stdout)
			_ = results.Table(opts.Stdout, recs, plan)
		}
		if runErr == nil && ctx.Err() != nil {
			runErr = fmt.Errorf("interrupted; see what is left with 'protobench status %s', continue with --resume %s", dir, dir)
		}
		return dir, runErr
	}

	upEnv := map[string]string{"PROTOBENCH_RAW_DIR": absRaw, "PROTOBENCH_OBS_CPUSET": plan.Layout.ObservabilityCPUSet}
	tlsInfo, tlsEnv, err := prepareTLS(dir, plan)
	if err != nil {
		return finish(fmt.Errorf("TLS certificates: %w", err))
	}
	for k, v := range tlsEnv {
		upEnv[k] = v
	}
	if tlsInfo != nil && info.TLS == nil {
		info.TLS = tlsInfo
	}
	for k, v := range env.imageEnv {
		upEnv[k] = v
	}
	fmt.Fprintf(opts.Stdout, "protobench: starting %s\n", strings.Join(env.observability, ", "))
	if err := env.orchestrator.Up(ctx, upEnv, env.observability...); err != nil {
		return finish(fmt.Errorf("start the observability stack: %w", err))
	}
	if env.locate != nil {
		p, g, err := env.locate(ctx)
		if err != nil {
			return finish(err)
		}
		env.prometheusURL, env.grafanaURL = p, g
		if env.located != nil {
			*env.located = [2]string{p, g}
		}
		if env.previous == nil {
			info.PrometheusURL, info.GrafanaURL = p, g
		}
	}
	pc := prom.New(env.prometheusURL)
	readyCtx, cancel := context.WithTimeout(ctx, 60*time.Second)
	err = pc.Ready(readyCtx)
	cancel()
	if err != nil {
		return finish(fmt.Errorf("Prometheus at %s: %w", env.prometheusURL, err))
	}

	if err := waitScraped(ctx, pc, "cadvisor", 60*time.Second); err != nil && ctx.Err() == nil {
		// The run still measures throughput and latency; only the server's CPU and memory
		// columns will be empty, and the warning says why.
		fmt.Fprintf(opts.Stderr, "protobench: warning: %v: server CPU and memory will be missing\n", err)
	}

	sr := &stepRunner{
		stack: env.orchestrator, meter: promMeter{c: pc, project: opts.Project, runID: info.RunID}, scenario: sc.Name, runID: info.RunID,
		missingTools: missingTools(env.images),
		resultDir:    dir, rawMount: "/raw", promURL: "http://prometheus:9090", settle: 2500 * time.Millisecond,
		project:   opts.Project,
		hostCores: env.engine != EngineSwarm,
		log:       func(format string, args ...any) { fmt.Fprintf(opts.Stderr, "protobench: "+format+"\n", args...) },
	}
	if p, ok := env.orchestrator.(stackPlacer); ok && env.engine != EngineSwarm {
		// stackAt starts unknown: a stack kept up by an earlier run (--keep-up) may sit where
		// that run last moved it, and compose does not see a docker update as a change.
		sr.placer, sr.layout, sr.observability = p, plan.Layout, env.observability
	}
	steps := trackSteps(sr, env.prometheusURL)
	prog := &progress{w: opts.Stdout, start: time.Now(), total: len(plan.Runs), estimate: plan.TotalDuration}
	if env.timing != nil {
		env.timing.start = time.Now()
		defer func() { env.timing.end = time.Now() }()
	}
	for i, r := range plan.Runs {
		if ctx.Err() != nil {
			break
		}
		if done[recordKey(r.Step, r.Target, r.Tool, r.Repeat)] {
			prog.finish(r)
			continue
		}
		prog.begin(i+1, r)
		if env.timing != nil {
			env.timing.add(r, i == len(plan.Runs)-1)
		}
		var rec record.Record
		if rr, capacity, err := resolveRate(recs, plan, r); err != nil {
			rec = results.FromRun(plan, r)
			rec.Error, rec.Flags = err.Error(), []string{record.FlagFailed}
		} else {
			r = rr
			rec = steps.run(ctx, plan, r)
			if capacity > 0 {
				rec.CapacityRPS = capacity
			}
		}
		if env.annotate != nil {
			env.annotate(&rec)
		}
		if ctx.Err() != nil && rec.Error == "" {
			// A signal between the tool's end and the CPU reading leaves the figures
			// incomplete: the run is kept, but not counted as done.
			rec.Error = "interrupted before the run's CPU and memory were read"
		}
		if rec.Error != "" {
			fmt.Fprintf(opts.Stderr, "protobench: %s: %s\n", r.ID, rec.Error)
		}
		recs = append(recs, rec)
		results.ApplyFlags(recs)
		// Written after every run, so an interrupted run keeps what it measured and --resume
		// can pick up from here.
		if err := writeRecords(dir, recs); err != nil {
			recs = recs[:len(recs)-1]
			return finish(fmt.Errorf("writing %s failed, so the run stops here (the records before it are kept): %w", filepath.Join(dir, results.JSONFile), err))
		}
		prog.finish(r)
		if env.daemonLost != nil {
			if lost := env.daemonLost(); lost != nil {
				return finish(fmt.Errorf("Docker stopped answering (%v): the run stops here; the %d records measured are kept", lost, len(recs)))
			}
		}
		// The cool-down is quiet time before the next run; the wait for the run's metrics and
		// the server's removal were quiet too, and count toward it.
		if rest := r.Cooldown - time.Since(sr.toolEnded); rest > 0 && i < len(plan.Runs)-1 {
			select {
			case <-ctx.Done():
			case <-time.After(rest):
			}
		}
	}
	return finish(nil)
}

// prepareRawDir makes raw/ (0755). The tools run as user (uid:gid, never root) and write their
// output files there, so when we are root the folder is handed to that user instead of being
// opened to everyone.
func prepareRawDir(raw, user string) error {
	if err := os.MkdirAll(raw, 0o755); err != nil {
		return err
	}
	if err := os.Chmod(raw, 0o755); err != nil {
		return err
	}
	if os.Getuid() != 0 || user == "" {
		return nil
	}
	uidS, gidS, _ := strings.Cut(user, ":")
	uid, err1 := strconv.Atoi(uidS)
	gid, err2 := strconv.Atoi(gidS)
	if err1 != nil || err2 != nil {
		return fmt.Errorf("PROTOBENCH_TOOL_USER=%q: want uid:gid in numbers", user)
	}
	return os.Chown(raw, uid, gid)
}

// waitScraped waits until Prometheus has scraped job successfully, so the first step's window
// is covered by container metrics.
func waitScraped(ctx context.Context, pc *prom.Client, job string, timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	expr := fmt.Sprintf(`max(up{job=%q})`, job)
	if err := pc.WaitUntil(ctx, expr, 500*time.Millisecond, func(v float64) bool { return v == 1 }); err != nil {
		return fmt.Errorf("Prometheus could not scrape %s within %s", job, timeout)
	}
	return nil
}

// promMeter is the Meter backed by Prometheus and cAdvisor, reading our compose project only.
type promMeter struct {
	c       *prom.Client
	project string
	runID   string
}

func (m promMeter) WaitSeen(ctx context.Context, containerID string, timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	expr := fmt.Sprintf(`count(container_cpu_usage_seconds_total{id=~".*%s.*"})`, containerID)
	if err := m.c.WaitUntil(ctx, expr, 250*time.Millisecond, func(v float64) bool { return v > 0 }); err != nil {
		return fmt.Errorf("cAdvisor did not report container %.12s within %s", containerID, timeout)
	}
	return nil
}

// WaitCovered waits until cAdvisor's newest CPU sample of the service, as stored in Prometheus,
// is at or after end: then a query over a window ending at end reads complete data.
func (m promMeter) WaitCovered(ctx context.Context, service string, end time.Time, timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	expr := fmt.Sprintf(`max(timestamp(container_cpu_usage_seconds_total{container_label_com_docker_compose_project=%q,container_label_com_docker_compose_service=%q}))`, m.project, service)
	want := float64(end.UnixNano()) / 1e9
	if err := m.c.WaitUntil(ctx, expr, 100*time.Millisecond, func(v float64) bool { return v >= want }); err != nil {
		if ctx.Err() != nil && errors.Is(ctx.Err(), context.Canceled) {
			return ctx.Err()
		}
		return fmt.Errorf("Prometheus held no sample of %s after the window's end within %s; its CPU figures may miss the last second", service, timeout)
	}
	return nil
}

func (m promMeter) Usage(ctx context.Context, service string, start, end time.Time) (containerUsage, error) {
	return measureContainer(ctx, m.c, m.project, m.runID, service, start, end)
}

// StackUsage reads an observability service's usage over [start, end]: it runs throughout, so it
// carries no run's label.
func (m promMeter) StackUsage(ctx context.Context, service string, start, end time.Time) (containerUsage, error) {
	return measureContainer(ctx, m.c, m.project, "", service, start, end)
}

// Cores reads how the host CPUs of cpuset spent [start, end], from node-exporter.
func (m promMeter) Cores(ctx context.Context, cpuset string, start, end time.Time) (*record.CoreTime, error) {
	return measureCores(ctx, m.c, cpuset, start, end)
}

// Busy reads how many CPU seconds processes spent on the host CPUs of cpuset over [start, end].
func (m promMeter) Busy(ctx context.Context, cpuset string, start, end time.Time) (float64, error) {
	return measureBusy(ctx, m.c, cpuset, start, end)
}

// ServicesCPU reads the CPU seconds of the project's containers of services over [start, end].
func (m promMeter) ServicesCPU(ctx context.Context, services []string, start, end time.Time) (float64, error) {
	return measureServicesCPU(ctx, m.c, m.project, services, start, end)
}

// missingTools says, per tool, why its program is not in this machine's images: the runs that
// need it then fail at once with that reason, and the rest of the scenario goes on.
func missingTools(set images.Set) map[string]string {
	out := map[string]string{}
	for _, name := range tool.Names() {
		c, _ := toolCapabilities(name)
		img, ok := set[c.Image]
		switch {
		case !ok:
		case !set.Available(c.Image):
			out[name] = fmt.Sprintf("its image %s is unavailable: %s", c.Image, img.Note)
		case c.ImageVariant != "" && img.Variant != c.ImageVariant:
			out[name] = fmt.Sprintf("this machine's %s image has no %s (%s)", c.Image, c.ImageVariant, img.Note)
		}
	}
	return out
}

// writeRecords replaces results.json with recs, in the results package's format (missing
// figures as null).
func writeRecords(dir string, recs []record.Record) error {
	var buf bytes.Buffer
	if err := results.WriteJSON(&buf, recs); err != nil {
		return err
	}
	return results.WriteFileAtomic(filepath.Join(dir, results.JSONFile), buf.Bytes())
}
