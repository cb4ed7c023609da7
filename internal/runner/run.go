package runner

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"github.com/protobench/protobench/internal/compose"
	"github.com/protobench/protobench/internal/cputopo"
	"github.com/protobench/protobench/internal/engine"
	"github.com/protobench/protobench/internal/hostspeed"
	"github.com/protobench/protobench/internal/images"
	"github.com/protobench/protobench/internal/repo"
	"github.com/protobench/protobench/internal/results"
	"github.com/protobench/protobench/internal/scenario"
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

// runCommand is the whole run: the scenario's plan, the engine's choice, the compose client and
// the images, the engine, every run into the results folder, and the teardown. ARCHITECTURE.md
// ("The path of one run through the code") follows it call by call.
func runCommand(sigs *signals, opts Options, given map[string]bool) int {
	ctx := sigs.run
	plan, prev, code := loadPlan(&opts, given)
	if code != 0 {
		return code
	}
	choice := engineChoices[opts.Engine] // parseRunFlagsSet has checked the name
	if opts.DryRun {
		return dryRun(ctx, opts, plan, choice)
	}
	locks, code := takeRunLocks(opts, plan, choice)
	if code != 0 {
		return code
	}
	defer locks.release()
	if code := checkOutput(opts); code != 0 {
		return code
	}
	pre := preflight(ctx, opts, plan, choice)
	cc, cleanupCustom, code := openCompose(ctx, opts, plan, false)
	if code != 0 {
		return code
	}
	defer cleanupCustom()
	set, code := prepare(ctx, opts, plan, cc)
	if code != 0 {
		return code
	}
	td := newTeardown(cc, opts.Project, opts.Docker, opts.Stderr)
	env, code := openEngine(ctx, opts, plan, choice, cc, set, td)
	if code != 0 {
		td.run(sigs.hurry)
		return code
	}
	env.previous, env.preflight = prev, pre
	env.lockFolder = locks.lockFolder
	dir, err := execute(ctx, opts, plan, env)
	return closeRun(sigs, opts, env, td, dir, err)
}

// loadPlan finds the scenario (the resumed folder's own, for --resume) and expands it.
func loadPlan(opts *Options, given map[string]bool) (*scenario.Plan, *RunInfo, int) {
	stderr := opts.Stderr
	root, err := repo.Root()
	if err != nil {
		fmt.Fprintln(stderr, "protobench:", err)
		return nil, nil, 2
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
			return nil, nil, 2
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
		return nil, nil, 2
	}
	if prev != nil {
		if err := checkResume(opts, given, sc, *prev); err != nil {
			fmt.Fprintln(stderr, "protobench run:", err)
			return nil, nil, 2
		}
	}
	if prev == nil && !opts.DryRun && opts.Seed == 0 {
		// A new seed per run: a fixed order would put the same target first in every repeat.
		opts.Seed = rand.Uint64() | 1
	}
	plan, err := sc.Plan(scenario.PlanOptions{Quick: opts.Quick, Repeat: opts.Repeat, Only: opts.Only, Tools: opts.Tools, Seed: opts.Seed,
		Topology: cputopo.Host(), ForceLayout: opts.ForceLayout})
	if err != nil {
		fmt.Fprintf(stderr, "%s: %v\n", sc.Path, err)
		return nil, nil, 2
	}
	return plan, prev, 0
}

// takeRunLocks takes the run's project lock (refusing cores another project's run pins to) and,
// for a resume, its folder's, before anything is built or started: a refused run touches
// nothing of the run that holds them.
func takeRunLocks(opts Options, plan *scenario.Plan, choice engineChoice) (*runLocks, int) {
	var cores []int
	if choice.hostCores { // a swarm pins nothing to this host's cores
		cores = layoutCores(plan.Layout)
	}
	locks, err := lockRun(opts.Project, opts.Resume, cores)
	if err != nil {
		fmt.Fprintln(opts.Stderr, "protobench run:", err)
		return nil, 2
	}
	return locks, 0
}

// checkOutput fails before anything is built when the results folder cannot be written: known
// now, not after minutes of image builds.
func checkOutput(opts Options) int {
	if opts.Resume == "" {
		if err := checkWritable(opts.OutDir); err != nil {
			fmt.Fprintf(opts.Stderr, "protobench run: --out %s: %v\n", opts.OutDir, err)
			return 2
		}
	} else if err := checkWritable(opts.Resume); err != nil {
		fmt.Fprintf(opts.Stderr, "protobench run: --resume %s: %v\n", opts.Resume, err)
		return 2
	}
	return 0
}

// composeOptions are the compose client's options of a run (or, with dryRun, of a dry run).
func composeOptions(opts Options, dryRun bool, log io.Writer) compose.Options {
	copts := compose.Options{Dir: filepath.Join(opts.RepoRoot, "compose"), DryRun: dryRun, Log: log, ProjectName: opts.Project, Docker: opts.Docker}
	if opts.Publish {
		copts.Files = append(append([]string{}, compose.DefaultFiles...), "publish.yml")
	}
	return copts
}

// openCompose makes the compose client of a run or, with dryRun, of a dry run (which prints
// each command instead of running it), with the scenario's own servers in a compose file of
// their own. Both engines render their containers from the compose services through it, so a
// swarm run has one too. The function it returns removes that file.
func openCompose(ctx context.Context, opts Options, plan *scenario.Plan, dryRun bool) (*compose.Client, func(), int) {
	none := func() {}
	log := opts.Stderr
	if dryRun {
		log = opts.Stdout
	}
	copts := composeOptions(opts, dryRun, log)
	customFile, cleanupCustom, err := prepareCustom(ctx, opts.RepoRoot, opts.Project, plan, opts.Stdout, dryRun)
	if err != nil {
		fmt.Fprintln(opts.Stderr, "protobench:", err)
		return nil, none, 2
	}
	if customFile != "" {
		copts.Extra = []string{customFile}
	}
	cc, err := compose.New(ctx, copts)
	if err != nil {
		cleanupCustom()
		if ctx.Err() != nil {
			return nil, none, 1
		}
		fmt.Fprintln(opts.Stderr, "protobench:", err)
		return nil, none, 2
	}
	return cc, cleanupCustom, 0
}

// prepare checks the published ports and ensures the images the plan needs.
func prepare(ctx context.Context, opts Options, plan *scenario.Plan, cc *compose.Client) (images.Set, int) {
	stdout, stderr := opts.Stdout, opts.Stderr
	if opts.Publish {
		if code := checkPorts(stderr); code != 0 {
			return nil, code
		}
	}
	fmt.Fprintf(stdout, "protobench: %s, %d runs, about %s; compose %s (%s), project %s\n",
		plan.Scenario.Name, len(plan.Runs), plan.TotalDuration.Round(time.Second), cc.Version(), cc.Kind(), opts.Project)
	set, err := images.Ensure(ctx, images.Options{RepoRoot: opts.RepoRoot, Log: stdout, Only: neededImages(plan)})
	if ctx.Err() != nil {
		fmt.Fprintln(stderr, "protobench: interrupted while preparing the images; no results folder was made")
		return nil, 1
	}
	if set == nil {
		fmt.Fprintln(stderr, "protobench:", err)
		if errors.Is(err, compose.ErrDockerUnreachable) {
			return nil, 2
		}
		return nil, 1
	}
	if err != nil {
		// A missing image fails only the runs that need it; the rest still measure.
		fmt.Fprintf(stderr, "protobench: warning: some images are unavailable: %v\n", err)
	}
	return set, 0
}

// openEngine makes the engine of choice, hands it the images, and gathers what execute needs.
// The teardown removes what the engine started; on failure the caller runs it.
func openEngine(ctx context.Context, opts Options, plan *scenario.Plan, choice engineChoice, cc *compose.Client, set images.Set, td *teardown) (*environment, int) {
	stdout, stderr := opts.Stdout, opts.Stderr
	env := &environment{
		composeVersion: cc.Version() + " (" + cc.Kind() + ")",
		images:         set,
		imageEnv:       images.EnvVars(set),
		observability:  append([]string{}, observabilityServices...),
		planFlags:      PlanFlags{Quick: opts.Quick, Repeat: opts.Repeat, Only: opts.Only, Tools: opts.Tools, Seed: opts.Seed, ForceLayout: opts.ForceLayout},
		timing:         &runTiming{},
	}
	env.imageEnv["PROTOBENCH_TOOL_USER"] = toolUser()
	env.imageEnv[compose.ServerUserEnv] = serverUser()
	grafana := set.Available(images.Grafana)
	if !grafana {
		fmt.Fprintf(stdout, "protobench: Grafana is not available on this machine (%s); the dashboards are in %s and the report will be in the results folder\n",
			set[images.Grafana].Note, filepath.Join(opts.RepoRoot, "dashboards"))
	}
	eng, err := choice.open(ctx, opts, plan, cc, td, grafana)
	if err == nil {
		td.c, td.hint = eng, eng.Capabilities().CleanupHint
		err = eng.Prepare(ctx, set, env.imageEnv)
	}
	if err != nil {
		fmt.Fprintln(stderr, "protobench:", err)
		if ctx.Err() == nil {
			return nil, 2
		}
		return nil, 1
	}
	env.engine = eng
	caps := eng.Capabilities()
	if grafana && caps.Grafana {
		env.observability = append(env.observability, "grafana")
	}
	if caps.HostCores {
		env.measureHost = func() (hostspeed.Sample, error) {
			return hostspeed.Take(plan.Layout.ServerCPUSet, plan.Layout.ClientCPUSet)
		}
	}
	return env, 0
}

// closeRun tears the stack down (unless --keep-up), writes the report, and says how the run
// ended.
func closeRun(sigs *signals, opts Options, env *environment, td *teardown, dir string, err error) int {
	ctx, stdout, stderr := sigs.run, opts.Stdout, opts.Stderr
	interrupted := sigs.received() != nil || ctx.Err() != nil
	lost := env.engine.Lost()
	if !opts.KeepUp || interrupted || lost != nil {
		hurry := sigs.hurry
		if lost != nil {
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
		port, _ := strconv.Atoi(engine.PortSetting(p.env, p.def))
		if err := compose.PortFree(port); err != nil {
			fmt.Fprintf(stderr, "protobench: port %d (%s) is already in use on 127.0.0.1: stop what holds it (./run.sh down if it is an earlier protobench stack) or set %s\n", port, p.what, p.env)
			return 2
		}
	}
	return 0
}

// observabilityServices are the compose services of the stack every run starts (Grafana is
// added where its image is available).
var observabilityServices = []string{"prometheus", "cadvisor", "node-exporter"}
