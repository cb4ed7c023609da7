package runner

import (
	"context"
	"encoding/json"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/protobench/protobench/internal/compose"
	"github.com/protobench/protobench/internal/engine"
	"github.com/protobench/protobench/internal/hostclock"
	"github.com/protobench/protobench/internal/hostinfo"
	"github.com/protobench/protobench/internal/hostspeed"
	"github.com/protobench/protobench/internal/images"
	"github.com/protobench/protobench/internal/measure"
	"github.com/protobench/protobench/internal/prom"
	"github.com/protobench/protobench/internal/record"
	"github.com/protobench/protobench/internal/results"
	"github.com/protobench/protobench/internal/scenario"
	"github.com/protobench/protobench/internal/stepinfo"
	"github.com/protobench/protobench/internal/tool"
)

// environment is what execute needs from the outside world; the CLI fills it.
type environment struct {
	engine         engine.Engine
	composeVersion string
	images         images.Set
	imageEnv       map[string]string
	prometheusURL  string // as the host reaches it; set once the stack is up (engine.Locate)
	grafanaURL     string // empty when Grafana is unavailable
	observability  []string
	planFlags      PlanFlags
	previous       *RunInfo // run.json of the folder a resume continues
	// timing, when set, receives how long the runs took against their plan.
	timing *runTiming
	// preflight is what the pre-flight check said, one line each, for run.json.
	preflight []string
	// measureHost, when set, takes the host speed index (nil on an engine whose server cores
	// are not this host's, engine.Capabilities.HostCores).
	measureHost func() (hostspeed.Sample, error)
	// lockFolder, when set, takes a new results folder's lock (a resumed one's is held already).
	lockFolder func(dir string) error
}

// session is one execution of a plan into one results folder: the records so far and run.json.
type session struct {
	opts Options
	plan *scenario.Plan
	env  *environment
	dir  string
	recs []record.Record
	done map[string]bool // the runs a resumed folder already holds, by recordKey
	info RunInfo
	// absRaw is raw/ as an absolute path, for the compose files' bind mounts.
	absRaw string
	// resumeIndex is this session's entry in info.Resumes, or -1 for the first session.
	resumeIndex int
	// answered: the answer was printed once the headline step's runs were done.
	answered bool
}

// execute runs a plan in an environment whose images exist, and returns the results folder.
// Whatever stops it (a signal, a full disk, a daemon that stops answering), the records measured
// so far are in the folder when it returns.
func execute(ctx context.Context, opts Options, plan *scenario.Plan, env *environment) (string, error) {
	s, err := openSession(ctx, opts, plan, env)
	if err != nil {
		return s.dir, err
	}
	// From here on, whatever happens, the folder ends with every record measured and a summary.
	pc, err := s.startStack(ctx)
	if err != nil {
		return s.finish(ctx, err)
	}
	if err := s.sampleHostSpeed(); err != nil {
		return s.finish(ctx, err)
	}
	sr := s.stepRunner(pc)
	defer sr.m.Clock.Stop()
	return s.finish(ctx, s.runAll(ctx, sr))
}

// openSession makes (or, to resume, reads) the results folder and writes run.json's start.
func openSession(ctx context.Context, opts Options, plan *scenario.Plan, env *environment) (*session, error) {
	sc := plan.Scenario
	now := time.Now()
	s := &session{opts: opts, plan: plan, env: env, dir: opts.Resume, done: map[string]bool{}, resumeIndex: -1}
	if s.dir == "" {
		s.dir = filepath.Join(opts.OutDir, resultsDirName(now, sc.Name))
		if err := os.Mkdir(s.dir, 0o755); err != nil {
			return &session{}, fmt.Errorf("results folder: %w", err)
		}
		if env.lockFolder != nil {
			if err := env.lockFolder(s.dir); err != nil {
				return &session{}, err
			}
		}
	} else {
		var err error
		if s.recs, s.done, err = loadFinished(s.dir); err != nil {
			return &session{}, err
		}
	}
	if err := prepareRawDir(filepath.Join(s.dir, "raw"), env.imageEnv["PROTOBENCH_TOOL_USER"]); err != nil {
		return s, err
	}
	if err := results.WriteFileAtomic(filepath.Join(s.dir, results.ScenarioFile), sc.Raw); err != nil {
		return s, err
	}
	var err error
	if s.absRaw, err = filepath.Abs(filepath.Join(s.dir, "raw")); err != nil {
		return s, err
	}
	pf := env.planFlags
	s.info = RunInfo{
		RunID: filepath.Base(s.dir), Scenario: sc.Name, ScenarioFile: sc.Path, ScenarioSHA256: sc.Hash(),
		Command: os.Args, Quick: opts.Quick, Started: now.UTC(),
		Host:           hostinfo.Collect(ctx, opts.RepoRoot),
		ComposeVersion: env.composeVersion, Images: env.images.Sorted(), Layout: plan.Layout,
		ServerKnobs: map[string]any{}, Notes: plan.Notes,
		PrometheusURL: redactURL(env.prometheusURL), GrafanaURL: env.grafanaURL,
		ComposeProject: opts.Project, PlanFlags: &pf, Engine: env.engine.Capabilities().Name,
		Preflight: env.preflight,
	}
	s.info.Host.ComposeVersion = env.composeVersion
	for _, r := range plan.Runs {
		if len(r.Knobs) > 0 {
			s.info.ServerKnobs[r.Target] = r.Knobs
		}
	}
	if env.previous != nil {
		// The first session's metadata stays; this session is appended to it.
		s.info = *env.previous
		s.info.Resumes = append(s.info.Resumes, Resume{Started: now.UTC(), Command: os.Args, Done: len(s.recs)})
		s.resumeIndex = len(s.info.Resumes) - 1
	}
	if err := writeJSON(filepath.Join(s.dir, results.RunFile), s.info); err != nil {
		return s, err
	}
	return s, nil
}

// sampleHostSpeed takes the host speed index at the start of a first session. It is taken with
// the observability stack up, as the end sample is, so that the drift compare reads between the
// two is the machine's and not the stack's own cost on the cores (issue 38).
func (s *session) sampleHostSpeed() error {
	if s.env.measureHost == nil || s.env.previous != nil {
		return nil
	}
	s.info.HostSpeed = &hostspeed.Record{Method: hostspeed.Method, ServerCPUSet: s.plan.Layout.ServerCPUSet, ClientCPUSet: s.plan.Layout.ClientCPUSet}
	if hs, err := s.env.measureHost(); err != nil {
		s.info.HostSpeed.Error = err.Error()
	} else {
		s.info.HostSpeed.Start = &hs
	}
	return writeJSON(filepath.Join(s.dir, results.RunFile), s.info)
}

// writeInfo writes run.json with this session's end.
func (s *session) writeInfo() error {
	t := time.Now().UTC()
	if s.resumeIndex >= 0 {
		s.info.Resumes[s.resumeIndex].Finished = &t
	} else {
		s.info.Finished = &t
	}
	return writeJSON(filepath.Join(s.dir, results.RunFile), s.info)
}

// finish ends the folder whatever stopped the session: the host speed at the end, the engine's
// part of run.json, the records, the summary and the report, and the table on the terminal.
func (s *session) finish(ctx context.Context, runErr error) (string, error) {
	if s.info.HostSpeed != nil && s.info.HostSpeed.Start != nil && ctx.Err() == nil {
		if hs, err := s.env.measureHost(); err != nil {
			s.info.HostSpeed.Error = err.Error()
		} else {
			s.info.HostSpeed.End = &hs
		}
	}
	if s.env.previous == nil {
		if err := s.describeEngine(ctx); err != nil && runErr == nil {
			runErr = err
		}
	}
	if err := dropTLSKey(s.dir, s.info.TLS); err != nil {
		fmt.Fprintf(s.opts.Stderr, "protobench: warning: deleting the TLS key: %v\n", err)
	}
	if err := s.writeInfo(); err != nil && runErr == nil {
		runErr = err
	}
	if err := results.WriteAll(s.dir, nil, s.plan, s.recs); err != nil {
		fmt.Fprintf(s.opts.Stderr, "protobench: writing the summary: %v\n", err)
		if runErr == nil {
			runErr = err
		}
	}
	if len(s.recs) > 0 {
		fmt.Fprintln(s.opts.Stdout)
		_ = results.Table(s.opts.Stdout, s.recs, s.plan)
	}
	if runErr == nil && ctx.Err() != nil {
		runErr = fmt.Errorf("interrupted; see what is left with 'protobench status %s', continue with --resume %s", s.dir, s.dir)
	}
	return s.dir, runErr
}

// describeEngine puts the engine's own account of the run (engine.Description.Detail) into
// run.json, as the engine marshals it.
func (s *session) describeEngine(ctx context.Context) error {
	d := s.env.engine.Describe(ctx)
	if d.Detail == nil {
		return nil
	}
	b, err := json.Marshal(d.Detail)
	if err != nil {
		return fmt.Errorf("run.json: the engine's description: %w", err)
	}
	s.info.Swarm = b
	return nil
}

// startStack starts the observability stack (with the run's certificates when a step is TLS),
// finds Prometheus and waits until it is ready and has scraped cAdvisor.
func (s *session) startStack(ctx context.Context) (*prom.Client, error) {
	upEnv := map[string]string{"PROTOBENCH_RAW_DIR": s.absRaw, "PROTOBENCH_OBS_CPUSET": s.plan.Layout.ObservabilityCPUSet}
	owner, err := keyOwner(s.env.imageEnv[compose.ServerUserEnv])
	if err != nil {
		return nil, err
	}
	tlsInfo, tlsEnv, err := prepareTLS(s.dir, s.plan, s.info.TLS, owner)
	if err != nil {
		return nil, fmt.Errorf("TLS certificates: %w", err)
	}
	for k, v := range tlsEnv {
		upEnv[k] = v
	}
	s.info.TLS = tlsInfo
	for k, v := range s.env.imageEnv {
		upEnv[k] = v
	}
	fmt.Fprintf(s.opts.Stdout, "protobench: starting %s\n", strings.Join(s.env.observability, ", "))
	if err := s.env.engine.Up(ctx, upEnv, s.env.observability...); err != nil {
		return nil, fmt.Errorf("start the observability stack: %w", err)
	}
	p, g, err := s.env.engine.Locate(ctx)
	if err != nil {
		return nil, err
	}
	s.env.prometheusURL, s.env.grafanaURL = p, g
	if s.env.previous == nil {
		s.info.PrometheusURL, s.info.GrafanaURL = redactURL(p), g
	}
	pc := prom.New(s.env.prometheusURL)
	readyCtx, cancel := context.WithTimeout(ctx, 60*time.Second)
	err = pc.Ready(readyCtx)
	cancel()
	if err != nil {
		return nil, fmt.Errorf("Prometheus at %s: %w", redactURL(s.env.prometheusURL), err)
	}
	if err := waitScraped(ctx, pc, "cadvisor", 60*time.Second); err != nil && ctx.Err() == nil {
		// The run still measures throughput and latency; only the server's CPU and memory
		// columns will be empty, and the warning says why.
		fmt.Fprintf(s.opts.Stderr, "protobench: warning: %v: server CPU and memory will be missing\n", err)
	}
	return pc, nil
}

// stepRunner is what runs each planned run: the engine, and the measurement from the
// Prometheus of pc, with the observability stack moved along where the engine pins cores.
func (s *session) stepRunner(pc *prom.Client) *stepRunner {
	caps := s.env.engine.Capabilities()
	log := func(format string, args ...any) { fmt.Fprintf(s.opts.Stderr, "protobench: "+format+"\n", args...) }
	m := &measure.Measurer{Meter: measure.NewProm(pc, s.opts.Project, s.info.RunID), Settle: 2500 * time.Millisecond,
		HostCores: caps.HostCores, Log: log}
	if caps.PinsCores {
		m.Placer, m.Layout, m.Observability = s.env.engine, s.plan.Layout, s.env.observability
	}
	if caps.HostCores {
		// The sysfs fallback for the cores' clock; a host without cpufreq has none to sample.
		cpus, _ := scenario.ParseCPUSet(s.plan.Layout.ServerCPUSet + "," + s.plan.Layout.ClientCPUSet)
		m.Clock, _ = hostclock.StartSampler("/", cpus, time.Second)
	}
	return newStepRunner(s.opts, s.plan, stepSetup{eng: s.env.engine, m: m, steps: stepinfo.New(s.env.prometheusURL, log),
		runID: s.info.RunID, resultDir: s.dir, promURL: "http://prometheus:9090", missing: missingTools(s.env.images)})
}

// runAll runs every planned run the folder does not hold yet, writing the records after each.
func (s *session) runAll(ctx context.Context, sr *stepRunner) error {
	prog := &progress{w: s.opts.Stdout, start: time.Now(), total: len(s.plan.Runs), estimate: s.plan.TotalDuration}
	if s.env.timing != nil {
		s.env.timing.start = time.Now()
		defer func() { s.env.timing.end = time.Now() }()
	}
	for i, r := range s.plan.Runs {
		if ctx.Err() != nil {
			break
		}
		if s.done[recordKey(r.Step, r.Target, r.Tool, r.Repeat)] {
			prog.finish(r)
			continue
		}
		prog.begin(i+1, r)
		if s.env.timing != nil {
			s.env.timing.add(r, i == len(s.plan.Runs)-1)
		}
		r, err := s.one(ctx, sr, r)
		if err != nil {
			return err
		}
		prog.result(s.recs[len(s.recs)-1])
		prog.finish(r)
		s.answerIfHeadlineDone(i)
		if lost := s.env.engine.Lost(); lost != nil {
			return fmt.Errorf("Docker stopped answering (%v): the run stops here; the %d records measured are kept", lost, len(s.recs))
		}
		// The cool-down is quiet time before the next run; the wait for the run's metrics and
		// the server's removal were quiet too, and count toward it.
		if rest := r.Cooldown - time.Since(sr.toolEnded); rest > 0 && i < len(s.plan.Runs)-1 {
			select {
			case <-ctx.Done():
			case <-time.After(rest):
			}
		}
	}
	return nil
}

// one runs r (with its rate resolved, for a latency-at-equal-load run), flags the records and
// writes them, so an interrupted run keeps what it measured and --resume can pick up from here.
// It returns the run as it ran.
func (s *session) one(ctx context.Context, sr *stepRunner, r scenario.Run) (scenario.Run, error) {
	var rec record.Record
	if rr, capacity, err := resolveRate(s.recs, s.plan, r); err != nil {
		rec = results.FromRun(s.plan, r)
		rec.Error, rec.Flags = err.Error(), []string{record.FlagFailed}
	} else {
		r = rr
		rec = sr.run(ctx, s.plan, r)
		if capacity > 0 {
			rec.CapacityRPS = capacity
		}
	}
	s.env.engine.Annotate(&rec)
	if rec.Valid() && s.env.engine.Capabilities().PinsCores {
		// The layout's own flags (smt-shared, mixed-cores) hold for every run it placed.
		for _, f := range s.plan.Layout.Flags {
			rec.AddFlag(f)
		}
	}
	if ctx.Err() != nil && rec.Error == "" {
		// A signal between the tool's end and the CPU reading leaves the figures
		// incomplete: the run is kept, but not counted as done.
		rec.Error = "interrupted before the run's CPU and memory were read"
	}
	if rec.Error != "" {
		fmt.Fprintf(s.opts.Stderr, "protobench: %s: %s\n", r.ID, rec.Error)
	}
	s.recs = append(s.recs, rec)
	results.ApplyFlags(s.recs)
	if err := writeRecords(s.dir, s.recs); err != nil {
		s.recs = s.recs[:len(s.recs)-1]
		return r, fmt.Errorf("writing %s failed, so the run stops here (the records before it are kept): %w", filepath.Join(s.dir, results.JSONFile), err)
	}
	return r, nil
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

// redactURL hides the password a URL carries (a swarm Prometheus published on another node
// asks for one made for the run): run.json and errors keep the address only.
func redactURL(s string) string {
	u, err := url.Parse(s)
	if err != nil || u.User == nil {
		return s
	}
	return u.Redacted()
}
