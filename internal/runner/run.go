package runner

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"github.com/protobench/protobench/internal/repo"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/protobench/protobench/internal/compose"
	"github.com/protobench/protobench/internal/hostspeed"
	"github.com/protobench/protobench/internal/images"
	"github.com/protobench/protobench/internal/record"
	"github.com/protobench/protobench/internal/results"
	"github.com/protobench/protobench/internal/scenario"
	"github.com/protobench/protobench/internal/stepinfo"
	"github.com/protobench/protobench/internal/targets"
	"github.com/protobench/protobench/internal/tool"
)

// Command is `protobench run`: it returns 0 when every run measured something, 1 when some run
// failed or the run could not finish, 2 for bad input (flags, scenario, a resume that does not
// match its folder, Docker unreachable, a taken port), and 130, 143 or 129 when SIGINT, SIGTERM
// or SIGHUP stopped it (after writing the partial results and removing its containers).
func Command(parent context.Context, args []string, stdout, stderr io.Writer) int {
	opts, given, err := parseRunFlagsSet(args, stderr)
	if err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		fmt.Fprintln(stderr, "protobench run:", err)
		return 2
	}
	opts.Stdout, opts.Stderr = stdout, stderr
	sigs := catchSignals(parent,
		func(sig os.Signal) {
			fmt.Fprintf(stderr, "\nprotobench: %s: stopping the run, writing what it measured and removing its containers (a second signal skips the graceful parts)\n", signalName(sig))
		},
		func(sig os.Signal) {
			fmt.Fprintf(stderr, "\nprotobench: %s again: removing the containers at once\n", signalName(sig))
		})
	defer sigs.stop()
	code := runCommand(sigs, opts, given)
	if n := exitCode(sigs.received()); n != 0 {
		return n
	}
	return code
}

func runCommand(sigs *signals, opts Options, given map[string]bool) int {
	ctx, stdout, stderr := sigs.run, opts.Stdout, opts.Stderr
	root, err := repo.Root()
	if err != nil {
		fmt.Fprintln(stderr, "protobench:", err)
		return 2
	}
	opts.RepoRoot = root
	opts.ScenariosDir = filepath.Join(root, "scenarios")
	if opts.OutDir == "" {
		opts.OutDir = filepath.Join(root, "results")
	}
	var prev *RunInfo
	if opts.Resume != "" {
		info, err := readRunInfo(opts.Resume)
		if err != nil {
			fmt.Fprintf(stderr, "protobench run: --resume %s: not a results folder: %v\n", opts.Resume, err)
			return 2
		}
		prev = &info
		if opts.Scenario == "" {
			// A resumed run replays the exact scenario file it started with.
			opts.Scenario = filepath.Join(opts.Resume, "scenario.yaml")
		}
	}

	sc, err := scenario.Find(opts.Scenario, opts.ScenariosDir)
	if err != nil {
		fmt.Fprintln(stderr, err)
		return 2
	}
	if prev != nil {
		if err := checkResume(&opts, given, sc, *prev); err != nil {
			fmt.Fprintln(stderr, "protobench run:", err)
			return 2
		}
	}
	if prev == nil && !opts.DryRun && opts.Seed == 0 {
		// A new seed per run: a fixed order would put the same target first in every repeat.
		opts.Seed = rand.Uint64() | 1
	}
	plan, err := sc.Plan(scenario.PlanOptions{Quick: opts.Quick, Repeat: opts.Repeat, Only: opts.Only, Tools: opts.Tools, Cores: runtime.NumCPU(), Seed: opts.Seed})
	if err != nil {
		fmt.Fprintf(stderr, "%s: %v\n", sc.Path, err)
		return 2
	}
	if opts.DryRun {
		return dryRun(ctx, opts, plan)
	}
	// Checked before anything is built: a results folder that cannot be written is known now,
	// not after minutes of image builds.
	if opts.Resume == "" {
		if err := checkWritable(opts.OutDir); err != nil {
			fmt.Fprintf(stderr, "protobench run: --out %s: %v\n", opts.OutDir, err)
			return 2
		}
	} else if err := checkWritable(opts.Resume); err != nil {
		fmt.Fprintf(stderr, "protobench run: --resume %s: %v\n", opts.Resume, err)
		return 2
	}

	copts := compose.Options{Dir: filepath.Join(root, "compose"), Log: stderr, ProjectName: opts.Project, Docker: opts.Docker}
	if opts.Publish {
		copts.Files = append(append([]string{}, compose.DefaultFiles...), "publish.yml")
	}
	customFile, cleanupCustom, err := prepareCustom(ctx, root, plan, stdout, false)
	if err != nil {
		fmt.Fprintln(stderr, "protobench:", err)
		return 2
	}
	defer cleanupCustom()
	if customFile != "" {
		copts.Extra = []string{customFile}
	}
	cc, err := compose.New(ctx, copts)
	if err != nil {
		if ctx.Err() != nil {
			return 1
		}
		fmt.Fprintln(stderr, "protobench:", err)
		return 2
	}
	if opts.Publish {
		if code := checkPorts(stderr); code != 0 {
			return code
		}
	}
	fmt.Fprintf(stdout, "protobench: %s, %d runs, about %s; compose %s (%s), project %s\n",
		sc.Name, len(plan.Runs), plan.TotalDuration.Round(time.Second), cc.Version(), cc.Kind(), opts.Project)
	set, err := images.Ensure(ctx, images.Options{RepoRoot: root, Log: stdout, Only: neededImages(plan)})
	if ctx.Err() != nil {
		fmt.Fprintln(stderr, "protobench: interrupted while preparing the images; no results folder was made")
		return 1
	}
	if set == nil {
		fmt.Fprintln(stderr, "protobench:", err)
		if errors.Is(err, compose.ErrDockerUnreachable) {
			return 2
		}
		return 1
	}
	if err != nil {
		// A missing image fails only the runs that need it; the rest still measure.
		fmt.Fprintf(stderr, "protobench: warning: some images are unavailable: %v\n", err)
	}
	td := newTeardown(cc, opts.Project, opts.Docker, stderr)
	stack := &composeStack{c: cc, td: td, docker: opts.Docker}
	var orchestrator Orchestrator = stack
	if fastPathEnabled() {
		orchestrator = newFastStack(stack)
	}
	env := environment{
		orchestrator:   orchestrator,
		composeVersion: cc.Version() + " (" + cc.Kind() + ")",
		images:         set,
		imageEnv:       images.EnvVars(set),
		observability:  append([]string{}, observabilityServices...),
		planFlags:      PlanFlags{Quick: opts.Quick, Repeat: opts.Repeat, Only: opts.Only, Tools: opts.Tools, Seed: opts.Seed},
		previous:       prev,
		teardown:       td,
		daemonLost:     stack.lost,
	}
	env.imageEnv["PROTOBENCH_TOOL_USER"] = toolUser()
	if set.Available(images.Grafana) {
		env.observability = append(env.observability, "grafana")
	} else {
		fmt.Fprintf(stdout, "protobench: Grafana is not available on this machine (%s); the dashboards are in %s and the report will be in the results folder\n",
			set[images.Grafana].Note, filepath.Join(root, "dashboards"))
	}
	env.locate = func(ctx context.Context) (string, string, error) {
		return locateUIs(ctx, cc, opts.Publish, set.Available(images.Grafana))
	}
	env.located = &[2]string{}
	env.timing = &runTiming{}
	env.engine = EngineCompose
	env.measureHost = func() (hostspeed.Sample, error) {
		return hostspeed.Take(plan.Layout.ServerCPUSet, plan.Layout.ClientCPUSet)
	}
	env.annotate = func(r *record.Record) { r.Engine = EngineCompose }
	if opts.Engine == EngineSwarm {
		ss, err := useSwarm(ctx, opts, root, stack, td, set, &env, stdout, stderr)
		if ss != nil {
			ss.goServers = goServers(plan)
		}
		if err != nil {
			fmt.Fprintln(stderr, "protobench:", err)
			if ctx.Err() == nil {
				td.run(sigs.hurry)
				return 2
			}
			td.run(sigs.hurry)
			return 1
		}
	}
	dir, err := execute(ctx, opts, plan, env)
	env.prometheusURL, env.grafanaURL = env.located[0], env.located[1]
	interrupted := sigs.received() != nil || ctx.Err() != nil
	if !opts.KeepUp || interrupted || stack.lost() != nil {
		hurry := sigs.hurry
		if stack.lost() != nil {
			// No graceful down against a daemon that does not answer.
			var cancel context.CancelFunc
			hurry, cancel = context.WithCancel(hurry)
			cancel()
		}
		td.run(hurry)
	}
	if dir != "" {
		renderReport(dir, stderr)
		fmt.Fprint(stdout, closingLines(dir, env.timing))
	}
	if opts.KeepUp && !interrupted {
		if env.grafanaURL != "" {
			fmt.Fprintf(stdout, "grafana: %s/d/protobench-overview\n", env.grafanaURL)
		}
		fmt.Fprintf(stdout, "prometheus: %s (stop the stack with ./run.sh down --project %s)\n", env.prometheusURL, opts.Project)
	}
	if err != nil {
		fmt.Fprintln(stderr, "protobench:", err)
		if errors.Is(err, errResumeMismatch) {
			return 2
		}
		return 1
	}
	if recs, lerr := results.Load(dir); lerr == nil {
		failed := 0
		for _, r := range recs {
			if !r.Valid() {
				failed++
			}
		}
		if failed > 0 {
			fmt.Fprintf(stderr, "protobench: %d of %d runs failed (see their errors in results.json); 'protobench status %s' lists them and --resume %s redoes them\n", failed, len(recs), dir, dir)
			return 1
		}
	}
	return 0
}

// locateUIs finds Prometheus (and Grafana) as the host reaches them: on the 127.0.0.1 port the
// user published, or else at the container's address on the compose network, which needs no
// published port.
func locateUIs(ctx context.Context, cc *compose.Client, published, grafana bool) (string, string, error) {
	ctx, cancel := context.WithTimeout(ctx, dockerCallTimeout)
	defer cancel()
	find := func(service string, port int) (string, error) {
		if published {
			if p, err := cc.PublishedHostPort(ctx, service, port); err == nil && p > 0 {
				return fmt.Sprintf("http://127.0.0.1:%d", p), nil
			}
		}
		ip, err := cc.ServiceIP(ctx, service)
		if err != nil {
			return "", err
		}
		return fmt.Sprintf("http://%s:%d", ip, port), nil
	}
	prom, err := find("prometheus", 9090)
	if err != nil {
		return "", "", fmt.Errorf("find Prometheus: %w", err)
	}
	graf := ""
	if grafana {
		graf, _ = find("grafana", 3000)
	}
	return prom, graf, nil
}

// checkWritable makes sure dir exists (creating it, the parent of results folders) and that a
// file can be created in it.
func checkWritable(dir string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	f, err := os.CreateTemp(dir, ".protobench-write-check-*")
	if err != nil {
		return fmt.Errorf("not writable: %w", err)
	}
	f.Close()
	return os.Remove(f.Name())
}

// toolUser is the uid:gid the load tools run as inside their containers: never root.
// PROTOBENCH_TOOL_USER overrides it; otherwise it is the invoking user, or nobody (65534) when
// that is root, so the files tools write into raw/ are not root's.
func toolUser() string {
	if v := os.Getenv("PROTOBENCH_TOOL_USER"); v != "" {
		return v
	}
	if uid := os.Getuid(); uid != 0 {
		return fmt.Sprintf("%d:%d", uid, os.Getgid())
	}
	return "65534:65534"
}

// toolCapabilities is what a load tool's adapter declares, its image included.
func toolCapabilities(name string) (tool.Capabilities, bool) {
	a, ok := tool.Lookup(name)
	if !ok {
		return tool.Capabilities{}, false
	}
	return a.Capabilities(), true
}

// goServers are the targets of a plan whose server is a Go program: a registry target with a
// Go server, or a custom target that says go_runtime: true.
func goServers(plan *scenario.Plan) map[string]bool {
	out := map[string]bool{}
	for _, r := range plan.Runs {
		if r.Custom != nil {
			out[r.Target] = r.Custom.GoRuntime
		} else if t, ok := targets.Lookup(r.Target); ok {
			out[r.Target] = t.GoServer != ""
		}
	}
	return out
}

// neededImages lists the images a plan uses, so a scenario without Python or k6 never waits
// for those builds.
func neededImages(plan *scenario.Plan) []string {
	need := map[string]bool{images.Prometheus: true, images.Cadvisor: true, images.NodeExporter: true, images.Grafana: true}
	for _, r := range plan.Runs {
		if t, ok := targets.Lookup(r.Target); ok {
			need[t.Image] = true
		}
		if c, ok := toolCapabilities(r.Tool); ok {
			need[c.Image] = true
		}
	}
	var out []string
	for _, n := range images.Names() {
		if need[n] {
			out = append(out, n)
		}
	}
	return out
}

// checkPorts fails early, naming the port, when Prometheus' or Grafana's published port is taken
// by something other than our own stack.
func checkPorts(stderr io.Writer) int {
	for _, p := range []struct{ env, def, what string }{
		{"PROTOBENCH_PROMETHEUS_PORT", "9090", "Prometheus"},
		{"PROTOBENCH_GRAFANA_PORT", "3000", "Grafana"},
	} {
		port, _ := strconv.Atoi(portSetting(p.env, p.def))
		if err := compose.PortFree(port); err != nil {
			fmt.Fprintf(stderr, "protobench: port %d (%s) is already in use on 127.0.0.1: stop what holds it (./run.sh down if it is an earlier protobench stack) or set %s\n", port, p.what, p.env)
			return 2
		}
	}
	return 0
}

func portSetting(env, def string) string {
	if v := os.Getenv(env); v != "" {
		return v
	}
	return def
}

// observabilityServices are the compose services of the stack every run starts (Grafana is
// added where its image is available).
var observabilityServices = []string{"prometheus", "cadvisor", "node-exporter"}

// dryRun prints the plan and the exact commands of the first run, without starting anything.
func dryRun(ctx context.Context, opts Options, plan *scenario.Plan) int {
	if err := plan.Print(opts.Stdout); err != nil {
		return 1
	}
	copts := compose.Options{Dir: filepath.Join(opts.RepoRoot, "compose"), DryRun: true, Log: opts.Stdout, ProjectName: opts.Project, Docker: opts.Docker}
	if opts.Publish {
		copts.Files = append(append([]string{}, compose.DefaultFiles...), "publish.yml")
	}
	customFile, cleanupCustom, err := prepareCustom(ctx, opts.RepoRoot, plan, opts.Stdout, true)
	if err != nil {
		fmt.Fprintln(opts.Stderr, "protobench:", err)
		return 2
	}
	defer cleanupCustom()
	if customFile != "" {
		copts.Extra = []string{customFile}
	}
	cc, err := compose.New(ctx, copts)
	if err != nil {
		fmt.Fprintln(opts.Stderr, "protobench:", err)
		return 2
	}
	if len(plan.Runs) == 0 {
		return 0
	}
	tmp, err := os.MkdirTemp("", "protobench-dry-run-")
	if err != nil {
		return 1
	}
	defer os.RemoveAll(tmp)
	raw := filepath.Join(tmp, "raw")
	if err := os.MkdirAll(raw, 0o755); err != nil {
		return 1
	}
	cs := &composeStack{c: cc, docker: opts.Docker}
	var stack Stack = cs
	if opts.Engine == EngineSwarm {
		d := newSwarmDryStack(cs, opts.Project, opts.RepoRoot, raw, opts.Stdout)
		d.s.goServers = goServers(plan)
		fmt.Fprintf(opts.Stdout, "\nswarm commands of the observability stack (planned for a single node without role labels):\n")
		upEnv := map[string]string{"PROTOBENCH_RAW_DIR": raw, "PROTOBENCH_OBS_CPUSET": plan.Layout.ObservabilityCPUSet, "PROTOBENCH_TOOL_USER": toolUser()}
		if err := d.Up(ctx, upEnv, observabilityServices...); err != nil {
			fmt.Fprintln(opts.Stderr, "protobench:", err)
			return 1
		}
		stack = d
	}
	first := plan.Runs[0]
	fmt.Fprintf(opts.Stdout, "\ncommands for the first run (%s):\n", first.ID)
	// Labelled as a run labels its containers, so the commands carry the step's labels.
	step := stepinfo.Step{RunID: "dry-run", Scenario: plan.Scenario.Name, Step: first.Step, Repeat: first.Repeat, Target: first.Target, Tool: first.Tool}
	stack = &labelledStack{Stack: stack, env: step.ComposeEnv()}
	sr := &stepRunner{stack: stack, meter: nullMeter{}, scenario: plan.Scenario.Name, runID: "dry-run",
		resultDir: tmp, rawMount: "/raw", project: opts.Project, log: func(string, ...any) {}}
	sr.run(ctx, plan, first)
	return 0
}

// nullMeter measures nothing; a dry run has no Prometheus.
type nullMeter struct{}

func (nullMeter) WaitSeen(context.Context, string, time.Duration) error { return nil }

func (nullMeter) Usage(context.Context, string, time.Time, time.Time) (containerUsage, error) {
	return containerUsage{}, nil
}

// composeStack adapts the compose client to the runner's Stack. It remembers the run-wide
// environment given to Up, because every compose command interpolates the whole file and needs
// the image references and the raw folder, not only the variables of its own call. Every call is
// bounded; when one runs out of time it asks whether the daemon still answers, and lost then
// ends the run.
type composeStack struct {
	c      *compose.Client
	td     *teardown
	docker string
	base   map[string]string

	mu      sync.Mutex
	lostErr error
}

// Time limits of the docker and compose calls a run makes. A healthy daemon answers each in
// well under a tenth of these.
const (
	dockerCallTimeout  = 30 * time.Second // inspect, ps, logs, port
	upTimeout          = 3 * time.Minute  // the observability stack: networks, volumes, containers
	recreateTimeout    = 2 * time.Minute  // a server container
	removeTimeout      = 60 * time.Second // a server's stop grace is 15 s
	daemonCheckTimeout = 10 * time.Second
)

func (s *composeStack) with(env map[string]string) map[string]string {
	m := make(map[string]string, len(s.base)+len(env))
	for k, v := range s.base {
		m[k] = v
	}
	for k, v := range env {
		m[k] = v
	}
	return m
}

// bounded runs call with a time limit; on a timeout that is not the caller's own cancellation it
// checks the daemon.
func (s *composeStack) bounded(ctx context.Context, limit time.Duration, call func(context.Context) error) error {
	if lost := s.lost(); lost != nil {
		// Once the daemon is known to be gone, every call fails at once instead of waiting out
		// its own limit.
		return lost
	}
	cctx, cancel := context.WithTimeout(ctx, limit)
	defer cancel()
	err := call(cctx)
	if err != nil && ctx.Err() == nil && cctx.Err() != nil {
		s.checkDaemon(ctx)
		return fmt.Errorf("no answer within %s: %w", limit, err)
	}
	return err
}

func (s *composeStack) checkDaemon(ctx context.Context) {
	cctx, cancel := context.WithTimeout(ctx, daemonCheckTimeout)
	defer cancel()
	if _, err := compose.CheckDocker(cctx, s.docker); err != nil && ctx.Err() == nil {
		s.mu.Lock()
		if s.lostErr == nil {
			s.lostErr = err
		}
		s.mu.Unlock()
	}
}

// lost is why the daemon is considered gone, or nil.
func (s *composeStack) lost() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.lostErr
}

func (s *composeStack) Up(ctx context.Context, env map[string]string, services ...string) error {
	s.base = s.with(env)
	s.td.arm()
	err := s.bounded(ctx, upTimeout, func(ctx context.Context) error { return s.c.Up(ctx, s.base, services...) })
	if lctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), dockerCallTimeout); s.lost() == nil {
		if lines, lerr := s.c.ProjectContainers(lctx); lerr == nil {
			for _, l := range lines {
				id, name, _ := strings.Cut(l, " ")
				s.td.note(id, name)
			}
		}
		cancel()
	} else {
		cancel()
	}
	return err
}
func (s *composeStack) Down(ctx context.Context) error { return s.c.Down(ctx) }
func (s *composeStack) Recreate(ctx context.Context, service string, env map[string]string) error {
	return s.bounded(ctx, recreateTimeout, func(ctx context.Context) error { return s.c.Recreate(ctx, service, s.with(env)) })
}
func (s *composeStack) WaitHealthy(ctx context.Context, service string, timeout time.Duration) error {
	return s.bounded(ctx, timeout+dockerCallTimeout, func(ctx context.Context) error { return s.c.WaitHealthy(ctx, service, timeout) })
}
func (s *composeStack) ContainerID(ctx context.Context, service string) (string, error) {
	var id string
	err := s.bounded(ctx, dockerCallTimeout, func(ctx context.Context) error {
		var err error
		id, err = s.c.ContainerID(ctx, service)
		return err
	})
	s.td.note(id, "server "+service)
	return id, err
}
func (s *composeStack) Remove(ctx context.Context, service string) error {
	return s.bounded(ctx, removeTimeout, func(ctx context.Context) error { return s.c.Remove(ctx, service) })
}
func (s *composeStack) Inspect(ctx context.Context, id string) (compose.ContainerState, error) {
	var st compose.ContainerState
	err := s.bounded(ctx, dockerCallTimeout, func(ctx context.Context) error {
		var err error
		st, err = s.c.Inspect(ctx, id)
		return err
	})
	return st, err
}
func (s *composeStack) Logs(ctx context.Context, id string) ([]byte, error) {
	var b []byte
	err := s.bounded(ctx, dockerCallTimeout, func(ctx context.Context) error {
		var err error
		b, err = s.c.Logs(ctx, id)
		return err
	})
	return b, err
}

// PlaceStack moves the running containers of services onto cpuset. One that cannot be moved
// (stopped, gone) does not keep the others where they were.
func (s *composeStack) PlaceStack(ctx context.Context, services []string, cpuset string) error {
	var errs []error
	for _, svc := range services {
		err := s.bounded(ctx, dockerCallTimeout, func(ctx context.Context) error {
			id, err := s.c.ContainerID(ctx, svc)
			if err != nil {
				return err
			}
			if id == "" {
				return errors.New("no container")
			}
			return s.c.SetCPUSet(ctx, id, cpuset)
		})
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", svc, err))
		}
	}
	return errors.Join(errs...)
}

// Run runs a tool within limit; a tool still running then is stopped and its container removed.
func (s *composeStack) Run(ctx context.Context, o OneOff) ([]byte, []byte, int, error) {
	var stdout, stderr []byte
	code := -1
	s.td.note(o.Name, "load tool "+o.Service)
	err := s.bounded(ctx, o.Limit, func(ctx context.Context) error {
		var err error
		if o.Window == nil {
			stdout, stderr, code, err = s.c.Run(ctx, o.Service, o.Name, o.Entrypoint, s.with(o.Env), o.Args)
			return err
		}
		// The tool's window comes from its container's own start and finish, not from when
		// compose returns: the container's tear-down must not dilute the CPU figures.
		var started, finished time.Time
		stdout, stderr, code, started, finished, err = s.c.RunTimed(ctx, o.Service, o.Name, o.Entrypoint, s.with(o.Env), o.Args)
		if !started.IsZero() {
			o.Window[0], o.Window[1] = started, finished
		}
		return err
	})
	return stdout, stderr, code, err
}
