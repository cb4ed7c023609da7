// Package obsbench is `go run ./bench/cmd/bench-observability`: what watching a benchmark costs. It runs one
// step (the gRPC server on its own core, protobench's generator on another, in its container as in
// a run) again and again, with the observability stack working and with it paused, interleaved,
// and prints the throughput and p99 cost with 95 % intervals, and the cores the stack itself used.
//
// The stack is the one a run uses, started the way a run starts it: compose/docker-compose.yml's
// prometheus, cadvisor and node-exporter services through the Compose engine (internal/engine),
// and the generator as the loadgen tool service through the engine's fast path, so that images,
// cpusets, CPU weights, caps, mounts and labels come from the compose file alone. A compose file
// of the bench's own puts them on the host network beside the native server, with Prometheus'
// jobs pointed at this step (override.go says what it changes and why). "Off" trials pause the
// stack's containers (docker pause freezes them: no scrape, no housekeeping), so both arms run
// against the same server process and the same page cache, and switching costs a second.
// Trials alternate on/off and off/on from repeat to repeat, so drift over minutes favours neither.
// With --tool k6 the step is measured by k6 (its image, the k6 adapter's command line), which
// pushes its metrics to Prometheus by remote write in the stack-on trials, as it does in a run.
package obsbench

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/protobench/protobench/bench/benchcli"
	"github.com/protobench/protobench/bench/internal/hostproc"
	"github.com/protobench/protobench/internal/images"
	"github.com/protobench/protobench/internal/repo"
	"github.com/protobench/protobench/internal/tool"
	"github.com/protobench/protobench/internal/tool/k6"
	_ "github.com/protobench/protobench/internal/tool/protobenchtool"
)

// Budget is the most the stack may cost, in percent of throughput or of p99 (issue 13).
const Budget = 3.0

// minTrialsForVerdict is the fewest repeats (on/off pairs) for an interval and a verdict.
const minTrialsForVerdict = 3

type options struct {
	duration, warmup, settle time.Duration
	repeats                  int
	connections, concurrency int
	serverCore, clientCore   int
	obsCPUs                  string
	scrapeInterval           string // empty: compose's global interval
	housekeeping             string
	cpuShares                int // 0: compose's cpu_shares per service
	outDir                   string
	keep                     bool
	tool                     string // protobench or k6
	k6RemoteWrite            bool   // k6 pushes to Prometheus in its stack-on trials
	k6PushInterval           string // "": the k6 adapter's interval
	design                   string // blocks or trials
	block                    time.Duration
	// switched are the stack's containers that the arms differ by (nil: all of them); the
	// others run in both arms, so that the difference is what the switched ones cost.
	switched []string
}

// Command runs `go run ./bench/cmd/bench-observability` and returns the exit code: 0 when it ran (whatever
// the cost), 1 when something failed, 2 for bad flags.
func Command(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	return benchcli.Run("bench-observability", args, stderr, parseFlags, func(o options) error {
		return run(ctx, o, stdout, stderr)
	})
}

func parseFlags(args []string, stderr io.Writer) (options, error) {
	var o options
	fs := benchcli.FlagSet("bench-observability", stderr)
	switchList := o.define(fs)
	if err := fs.Parse(args); err != nil {
		return o, err
	}
	o.defaultDesign()
	if err := o.parseSwitched(*switchList); err != nil {
		return o, err
	}
	if fs.NArg() > 0 {
		return o, fmt.Errorf("unexpected argument %q", fs.Arg(0))
	}
	return o, o.validate()
}

// define binds the flags to o's fields; --switch is a list, returned to be read after parsing
// (parseSwitched).
func (o *options) define(fs *flag.FlagSet) (switchList *string) {
	fs.DurationVar(&o.duration, "duration", 30*time.Second, "measured length of each trial (trial design)")
	fs.DurationVar(&o.warmup, "warmup", 3*time.Second, "generator warm-up before each trial's window (not measured)")
	fs.DurationVar(&o.settle, "settle", 2*time.Second, "pause after switching the stack on or off, before the trial")
	fs.IntVar(&o.repeats, "repeats", 0, "on/off pairs: blocks (default 40) or trials (default 5)")
	fs.StringVar(&o.design, "design", "", "blocks: one generator run, the stack switched every --block, adjacent blocks paired (protobench's default); trials: a generator run per trial, --duration each (k6's, and its only design)")
	fs.DurationVar(&o.block, "block", 5*time.Second, "length of each block in the block design; --settle of it after a switch is left out")
	fs.IntVar(&o.connections, "connections", 16, "generator connections")
	fs.IntVar(&o.concurrency, "concurrency", 1, "requests in flight per connection (streams on one gRPC channel); the main job's headline is --connections 1 --concurrency 100")
	fs.IntVar(&o.serverCore, "server-core", 0, "core the server is pinned to")
	fs.IntVar(&o.clientCore, "client-core", 1, "core the generator is pinned to")
	fs.StringVar(&o.obsCPUs, "obs-cpus", "", "cpuset of the observability containers (default: where a run puts them: every core but the server's and the client's, or the client's core when no other is left)")
	fs.StringVar(&o.scrapeInterval, "scrape-interval", "", "Prometheus' global scrape interval (default: compose/prometheus/prometheus.yml's; jobs with their own keep it)")
	fs.IntVar(&o.cpuShares, "cpu-shares", 0, "CPU weight of every observability container (default: each compose service's cpu_shares; Docker's default is 1024)")
	fs.StringVar(&o.housekeeping, "housekeeping", "1s", "cAdvisor housekeeping interval (the stack's is 1s)")
	fs.StringVar(&o.outDir, "out", "", "folder for the raw results (default: a new temporary folder)")
	fs.StringVar(&o.tool, "tool", "protobench", "load tool: protobench (its live metrics scraped every second) or k6 (remote write while the stack is on)")
	fs.BoolVar(&o.k6RemoteWrite, "k6-remote-write", true, "with --tool k6: push k6's metrics to Prometheus in the stack-on trials, as a run does; false leaves k6's output off in both arms, so that the cost is the stack's alone and the difference from a run with it is what the push costs")
	fs.StringVar(&o.k6PushInterval, "k6-push-interval", "", "with --tool k6: how often k6 pushes by remote write (default: the k6 adapter's, "+k6.RemoteWritePushInterval+"), so that an interval can be measured before a run uses it")
	switchList = fs.String("switch", "", "the stack's containers to switch on and off, comma-separated ("+strings.Join(stackServices, ", ")+"; default all); the others run in both arms, so that the cost is the switched ones' alone")
	fs.BoolVar(&o.keep, "keep", false, "leave the stack's containers running at the end (for a look at Prometheus)")
	return switchList
}

// defaultDesign fills in the design and the repeats left to their defaults: blocks for
// protobench, trials for k6, and each design's repeats.
func (o *options) defaultDesign() {
	if o.design == "" {
		o.design = "blocks"
		if o.tool == "k6" {
			o.design = "trials"
		}
	}
	if o.repeats == 0 {
		o.repeats = 5
		if o.design == "blocks" {
			o.repeats = 40
		}
	}
}

// parseSwitched reads --switch's list into o.switched (nil when it is empty: all of them).
func (o *options) parseSwitched(switchList string) error {
	if switchList == "" {
		return nil
	}
	for _, name := range strings.Split(switchList, ",") {
		name = strings.TrimSpace(name)
		if !slices.Contains(stackServices, name) {
			return fmt.Errorf("--switch %q: %q is not one of the stack's containers (%s)", switchList, name, strings.Join(stackServices, ", "))
		}
		if !slices.Contains(o.switched, name) {
			o.switched = append(o.switched, name)
		}
	}
	return nil
}

// validate says what is wrong with the flags' values, or nil.
func (o *options) validate() error {
	switch {
	case o.design != "blocks" && o.design != "trials":
		return fmt.Errorf("--design %q: want blocks or trials", o.design)
	case o.design == "blocks" && o.tool == "k6":
		return fmt.Errorf("--design blocks needs --tool protobench: k6's remote write cannot be switched within a run")
	case o.design == "blocks" && o.block < o.settle+time.Second:
		return fmt.Errorf("--block %s: want at least --settle (%s) plus 1s, so that each block keeps a whole second", o.block, o.settle)
	case o.repeats < 1:
		return fmt.Errorf("--repeats %d: want at least 1 (3 or more for an interval), or 0 for the design's default", o.repeats)
	case o.duration < time.Second:
		return fmt.Errorf("--duration %s: want at least 1s", o.duration)
	case o.serverCore == o.clientCore:
		return fmt.Errorf("--server-core and --client-core are both %d: the server and the generator need a core each", o.serverCore)
	case o.connections < 1:
		return fmt.Errorf("--connections %d: want at least 1", o.connections)
	case o.concurrency < 1:
		return fmt.Errorf("--concurrency %d: want at least 1", o.concurrency)
	case o.tool != "protobench" && o.tool != "k6":
		return fmt.Errorf("--tool %q: want protobench or k6", o.tool)
	case !o.k6RemoteWrite && o.tool != "k6":
		return fmt.Errorf("--k6-remote-write=false needs --tool k6: protobench's generator is scraped, not pushed")
	case o.k6PushInterval != "" && (o.tool != "k6" || !o.k6RemoteWrite):
		return fmt.Errorf("--k6-push-interval needs --tool k6 with its remote write on")
	case o.cpuShares != 0 && o.cpuShares < 2:
		return fmt.Errorf("--cpu-shares %d: want at least 2 (Docker's smallest weight), or 0 for compose's", o.cpuShares)
	}
	for _, d := range []struct{ flag, v string }{{"--scrape-interval", o.scrapeInterval}, {"--housekeeping", o.housekeeping}, {"--k6-push-interval", o.k6PushInterval}} {
		if d.v == "" && d.flag != "--housekeeping" {
			continue
		}
		if v, err := time.ParseDuration(d.v); err != nil || v <= 0 {
			return fmt.Errorf("%s %q: want a positive duration such as 1s", d.flag, d.v)
		}
	}
	return nil
}

// trial is one measured run of the step.
type trial struct {
	Repeat   int                `json:"repeat"`
	StackOn  bool               `json:"stack_on"`
	RPS      float64            `json:"throughput_rps"`
	P99Ms    float64            `json:"p99_ms"`
	Requests int64              `json:"requests"`
	Errors   int64              `json:"errors"`
	Seconds  float64            `json:"seconds"`
	Cores    map[string]float64 `json:"stack_cores,omitempty"` // per container, stack-on trials only
	Wait     *toolWait          `json:"tool_wait,omitempty"`   // the tool's threads: run-queue delay and CPU

	// startUnix and series are the generator's measured window and its seconds, which the block
	// design cuts into blocks; trials.json leaves them to the raw result file.
	startUnix float64
	series    []seriesPoint
}

func run(ctx context.Context, o options, stdout, stderr io.Writer) error {
	root, err := prepare(&o)
	if err != nil {
		return err
	}
	describe(o, stdout)

	srv, err := startServer(ctx, root, o)
	if err != nil {
		return err
	}
	defer srv.stop()

	a, _ := tool.Lookup(o.tool)
	set, err := images.Ensure(ctx, images.Options{RepoRoot: root, Only: []string{images.Prometheus, images.Cadvisor, images.NodeExporter, a.Capabilities().Image}})
	if err != nil {
		return fmt.Errorf("images: %w", err)
	}
	st, err := startStack(ctx, root, o, set, srv.metrics)
	if err != nil {
		return err
	}
	if o.keep {
		defer fmt.Fprintf(stdout, "bench-observability: the stack keeps running (--keep); remove it with:\n  %s\n", st.keepHint())
	} else {
		defer st.remove()
	}
	fmt.Fprintf(stdout, "bench-observability: stack up (Prometheus at http://%s), started with:\n", st.promAddr)
	for _, l := range st.settings {
		fmt.Fprintln(stdout, "  "+l)
	}
	if err := st.writeSettings(o.outDir); err != nil {
		return err
	}
	trials, err := measure(ctx, o, st, srv.addr, stdout)
	if err != nil {
		return err
	}
	return finish(ctx, o, st, trials, stdout, stderr)
}

// prepare checks that the host has what the bench runs with, and fills in the raw folder (made
// here) and the stack's cores when the flags left them out; it returns the checkout's root.
func prepare(o *options) (root string, err error) {
	if err := hostproc.CheckTaskset(); err != nil {
		return "", err
	}
	for _, bin := range []string{"docker", "go"} { // go builds the server
		if _, err := exec.LookPath(bin); err != nil {
			return "", fmt.Errorf("%s not found: it is needed to build and run the step", bin)
		}
	}
	if root, err = repo.Root(); err != nil {
		return "", err
	}
	if o.outDir == "" {
		if o.outDir, err = os.MkdirTemp("", "protobench-obsbench-"); err != nil {
			return "", err
		}
	} else if err := os.MkdirAll(o.outDir, 0o755); err != nil {
		return "", err
	}
	if o.obsCPUs == "" {
		o.obsCPUs = stackCores(o.serverCore, o.clientCore, o.tool)
	}
	return root, nil
}

// measure runs the trials of o's design.
func measure(ctx context.Context, o options, st *stack, addr string, stdout io.Writer) ([]trial, error) {
	if o.design == "blocks" {
		fmt.Fprintf(stdout, "bench-observability: block design, %d pairs of %s blocks in one %s generator run, %s after each switch left out\n",
			o.repeats, o.block, time.Duration(2*o.repeats+2)*o.block, o.settle)
		return runBlocks(ctx, o, st, addr, stdout)
	}
	return runTrials(ctx, o, st, addr, stdout)
}

// finish switches the stack back on, keeps the trials in trials.json and reports them, with
// what Prometheus last scraped.
func finish(ctx context.Context, o options, st *stack, trials []trial, stdout, stderr io.Writer) error {
	if err := st.set(ctx, true); err != nil {
		fmt.Fprintln(stderr, "bench-observability: warning:", err)
	}
	scrapes := scrapeSizes(ctx, "http://"+st.promAddr)
	b, _ := json.MarshalIndent(trials, "", "  ")
	if err := os.WriteFile(filepath.Join(o.outDir, "trials.json"), append(b, '\n'), 0o644); err != nil {
		return err
	}
	report(stdout, trials)
	if len(scrapes) > 0 {
		fmt.Fprintln(stdout, "\nwhat Prometheus scrapes (last scrape): where the stack costs too much, these and cAdvisor's --housekeeping are the levers")
		for _, l := range scrapes {
			fmt.Fprintln(stdout, "  "+l)
		}
	}
	return nil
}

// describe prints what the bench is about to measure, and where the stack sits.
func describe(o options, stdout io.Writer) {
	fmt.Fprintf(stdout, "bench-observability: %s, GetUser on %d connection(s) x %d in flight; server on core %d, generator on core %d, stack on cpus %q; raw files in %s\n",
		o.tool, o.connections, o.concurrency, o.serverCore, o.clientCore, o.obsCPUs, o.outDir)
	if o.design == "trials" {
		fmt.Fprintf(stdout, "bench-observability: trial design, %d x %s per arm\n", o.repeats, o.duration)
	}
	if o.tool == "k6" {
		if o.k6RemoteWrite {
			fmt.Fprintln(stdout, "bench-observability: k6 pushes by remote write in the stack-on trials, as in a run")
		} else {
			fmt.Fprintln(stdout, "bench-observability: k6's output is off in both arms: the cost measured is the stack's alone")
		}
	}
	if o.switched != nil {
		fmt.Fprintf(stdout, "bench-observability: only %s switched; the rest of the stack runs in both arms\n", strings.Join(o.switched, ", "))
	}
	switch o.obsCPUs {
	case strconv.Itoa(o.clientCore):
		fmt.Fprintln(stdout, "bench-observability: no spare core: the stack shares the generator's core, as it does in a run on this host for a tool that leaves its core room (scenario.Layout.StackCPUSet)")
	case strconv.Itoa(o.serverCore):
		fmt.Fprintln(stdout, "bench-observability: no spare core: the stack shares the server's core, as it does in a run on this host for a client-bound tool such as k6 (scenario.Layout.StackCPUSet)")
	}
}

// runTrials is the trial design: a generator run per trial, stack on and off alternating from
// repeat to repeat, the stack's own cores read across each stack-on trial.
func runTrials(ctx context.Context, o options, st *stack, addr string, stdout io.Writer) ([]trial, error) {
	var trials []trial
	for rep := 0; rep < o.repeats; rep++ {
		order := []bool{true, false}
		if rep%2 == 1 {
			order = []bool{false, true}
		}
		for _, on := range order {
			if ctx.Err() != nil {
				return trials, ctx.Err()
			}
			prefix := fmt.Sprintf("r%d-%s", rep, onOff(on))
			name := st.client.ProjectName() + "-" + o.tool + "-" + prefix
			var t toolRun
			var read func() (trial, error)
			if o.tool == "k6" {
				promURL := ""
				if on && o.k6RemoteWrite {
					promURL = "http://" + st.promAddr
				}
				var inv tool.Invocation
				var err error
				if t, inv, err = k6Run(o, addr, promURL, prefix, name); err != nil {
					return trials, err
				}
				read = func() (trial, error) { return runK6(ctx, st, t, inv, o.outDir) }
			} else {
				out := filepath.Join(o.outDir, prefix+".json")
				t = loadRun(o, addr, st.loadMetrics, out, name)
				read = func() (trial, error) { return runLoad(ctx, st, t, out) }
			}
			if rep == 0 {
				if err := st.note(ctx, t, "the tool, stack "+onOff(on), o.outDir, stdout); err != nil {
					return trials, err
				}
			}
			if err := st.set(ctx, on); err != nil {
				return trials, err
			}
			time.Sleep(o.settle)
			before, began := st.cpu(), time.Now()
			tr, err := trialSched(o.outDir, prefix, name, read)
			if err != nil {
				return trials, err
			}
			tr.Repeat, tr.StackOn = rep, on
			if on {
				// Over the wall time of the whole trial, the tool's start, warm-up and exit
				// included, since the stack's CPU was read across all of it.
				tr.Cores = map[string]float64{}
				after, span := st.cpu(), time.Since(began).Seconds()
				for svc, ns := range after {
					tr.Cores[svc] = float64(ns-before[svc]) / 1e9 / span
				}
			}
			fmt.Fprintf(stdout, "  repeat %d stack %-3s  %10.0f req/s  p99 %7.3f ms  errors %d\n", rep, onOff(on), tr.RPS, tr.P99Ms, tr.Errors)
			trials = append(trials, tr)
		}
	}
	return trials, nil
}
