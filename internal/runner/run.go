package runner

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"github.com/protobench/protobench/internal/repo"
	"github.com/protobench/protobench/internal/targets"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"time"

	"github.com/protobench/protobench/internal/compose"
	"github.com/protobench/protobench/internal/images"
	"github.com/protobench/protobench/internal/scenario"
	"github.com/protobench/protobench/internal/tool"
)

// Command is `protobench run`: it returns 0 when every run measured something, 1 when some run
// failed or the run could not finish, and 2 for bad input (flags, scenario, Docker unreachable,
// a taken port).
func Command(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	opts, err := parseRunFlags(args, stderr)
	if err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		fmt.Fprintln(stderr, "protobench run:", err)
		return 2
	}
	opts.Stdout, opts.Stderr = stdout, stderr
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
	if opts.Resume != "" && opts.Scenario == "" {
		// A resumed run replays the exact scenario file it started with.
		opts.Scenario = filepath.Join(opts.Resume, "scenario.yaml")
	}

	sc, err := scenario.Find(opts.Scenario, opts.ScenariosDir)
	if err != nil {
		fmt.Fprintln(stderr, err)
		return 2
	}
	plan, err := sc.Plan(scenario.PlanOptions{Quick: opts.Quick, Repeat: opts.Repeat, Only: opts.Only, Tools: opts.Tools, Cores: runtime.NumCPU()})
	if err != nil {
		fmt.Fprintf(stderr, "%s: %v\n", sc.Path, err)
		return 2
	}
	if opts.DryRun {
		return dryRun(ctx, opts, plan)
	}

	cc, err := compose.New(ctx, compose.Options{Dir: filepath.Join(root, "compose"), Log: stderr})
	if err != nil {
		fmt.Fprintln(stderr, "protobench:", err)
		return 2
	}
	if code := checkPorts(stderr); code != 0 {
		return code
	}
	fmt.Fprintf(stdout, "protobench: %s, %d runs, about %s; compose %s (%s)\n",
		sc.Name, len(plan.Runs), plan.TotalDuration.Round(time.Second), cc.Version(), cc.Kind())
	set, err := images.Ensure(ctx, images.Options{RepoRoot: root, Log: stdout, Only: neededImages(plan)})
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
	env := environment{
		orchestrator:   &composeStack{c: cc},
		composeVersion: cc.Version() + " (" + cc.Kind() + ")",
		images:         set,
		imageEnv:       images.EnvVars(set),
		prometheusURL:  "http://127.0.0.1:" + portSetting("PROTOBENCH_PROMETHEUS_PORT", "9090"),
		observability:  []string{"prometheus", "cadvisor", "node-exporter"},
	}
	if set.Available(images.Grafana) {
		env.observability = append(env.observability, "grafana")
		env.grafanaURL = "http://127.0.0.1:" + portSetting("PROTOBENCH_GRAFANA_PORT", "3000")
	} else {
		fmt.Fprintf(stdout, "protobench: Grafana is not available on this machine (%s); the dashboards are in %s and the report will be in the results folder\n",
			set[images.Grafana].Note, filepath.Join(root, "dashboards"))
	}
	dir, err := execute(ctx, opts, plan, env)
	if dir != "" {
		fmt.Fprintf(stdout, "\nresults: %s\n", dir)
	}
	if env.grafanaURL != "" && opts.KeepUp {
		fmt.Fprintf(stdout, "grafana: %s/d/protobench-overview\n", env.grafanaURL)
	}
	if opts.KeepUp {
		fmt.Fprintf(stdout, "prometheus: %s (stop the stack with ./run.sh down)\n", env.prometheusURL)
	}
	if err != nil {
		fmt.Fprintln(stderr, "protobench:", err)
		return 1
	}
	return 0
}

// toolCapabilities is what a load tool's adapter declares, its image included.
func toolCapabilities(name string) (tool.Capabilities, bool) {
	a, ok := tool.Lookup(name)
	if !ok {
		return tool.Capabilities{}, false
	}
	return a.Capabilities(), true
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

// dryRun prints the plan and the exact commands of the first run, without starting anything.
func dryRun(ctx context.Context, opts Options, plan *scenario.Plan) int {
	if err := plan.Print(opts.Stdout); err != nil {
		return 1
	}
	cc, err := compose.New(ctx, compose.Options{Dir: filepath.Join(opts.RepoRoot, "compose"), DryRun: true, Log: opts.Stdout})
	if err != nil {
		fmt.Fprintln(opts.Stderr, "protobench:", err)
		return 2
	}
	if len(plan.Runs) == 0 {
		return 0
	}
	fmt.Fprintf(opts.Stdout, "\ncommands for the first run (%s):\n", plan.Runs[0].ID)
	sr := &stepRunner{stack: &composeStack{c: cc}, meter: nullMeter{}, scenario: plan.Scenario.Name, runID: "dry-run",
		resultDir: os.TempDir(), rawMount: "/raw", log: func(string, ...any) {}}
	tmp, err := os.MkdirTemp("", "protobench-dry-run-")
	if err != nil {
		return 1
	}
	defer os.RemoveAll(tmp)
	sr.resultDir = tmp
	if err := os.MkdirAll(filepath.Join(tmp, "raw"), 0o755); err != nil {
		return 1
	}
	sr.run(ctx, plan, plan.Runs[0])
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
// the image references and the raw folder, not only the variables of its own call.
type composeStack struct {
	c    *compose.Client
	base map[string]string
}

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

func (s *composeStack) Up(ctx context.Context, env map[string]string, services ...string) error {
	s.base = s.with(env)
	return s.c.Up(ctx, s.base, services...)
}
func (s *composeStack) Down(ctx context.Context) error { return s.c.Down(ctx) }
func (s *composeStack) Recreate(ctx context.Context, service string, env map[string]string) error {
	return s.c.Recreate(ctx, service, s.with(env))
}
func (s *composeStack) WaitHealthy(ctx context.Context, service string, timeout time.Duration) error {
	return s.c.WaitHealthy(ctx, service, timeout)
}
func (s *composeStack) ContainerID(ctx context.Context, service string) (string, error) {
	return s.c.ContainerID(ctx, service)
}
func (s *composeStack) Remove(ctx context.Context, service string) error {
	return s.c.Remove(ctx, service)
}
func (s *composeStack) Run(ctx context.Context, o OneOff) ([]byte, []byte, int, error) {
	return s.c.Run(ctx, o.Service, o.Name, o.Entrypoint, s.with(o.Env), o.Args)
}
