// Package obsbench is `protobench bench-observability`: what watching a benchmark costs. It runs one
// step (the gRPC server on its own core, protobench's generator on another, in its container as in
// a run) again and again, with the observability stack working and with it paused, interleaved,
// and prints the throughput and p99 cost with 95 % intervals, and the cores the stack itself used.
//
// The stack is the one a run uses, with the settings read from the compose files: Prometheus'
// jobs and intervals (the server's and the generator's /metrics, cAdvisor, node-exporter),
// cAdvisor's and node-exporter's flags, and each container's CPU weight; all from the images
// `protobench images build` made, on the host network, pinned to the observability cores. "Off"
// trials pause its containers (docker pause freezes them: no scrape, no housekeeping), so both
// arms run against the same server process and the same page cache, and switching costs a second.
// Trials alternate on/off and off/on from repeat to repeat, so drift over minutes favours neither.
// With --tool k6 the step is measured by k6 (its image, the k6 adapter's command line), which
// pushes its metrics to Prometheus by remote write in the stack-on trials, as it does in a run.
package obsbench

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"text/tabwriter"
	"time"

	"github.com/protobench/protobench/internal/images"
	"github.com/protobench/protobench/internal/prom"
	"github.com/protobench/protobench/internal/repo"
	"github.com/protobench/protobench/internal/scenario"
	"github.com/protobench/protobench/internal/stats"
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
	// label marks the load tool's containers as the stack's are, so that the stack's removal
	// also takes a tool container whose docker CLI was killed (Ctrl-C) before it ended.
	label string
}

// Command runs `protobench bench-observability` and returns the exit code: 0 when it ran (whatever
// the cost), 1 when something failed, 2 for bad flags.
func Command(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	o, err := parseFlags(args, stderr)
	if err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		fmt.Fprintln(stderr, "protobench bench-observability:", err)
		return 2
	}
	if err := run(ctx, o, stdout, stderr); err != nil {
		fmt.Fprintln(stderr, "protobench bench-observability:", err)
		return 1
	}
	return 0
}

func parseFlags(args []string, stderr io.Writer) (options, error) {
	var o options
	fs := flag.NewFlagSet("bench-observability", flag.ContinueOnError)
	fs.SetOutput(stderr)
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
	switchList := fs.String("switch", "", "the stack's containers to switch on and off, comma-separated ("+strings.Join(stackServices, ", ")+"; default all); the others run in both arms, so that the cost is the switched ones' alone")
	fs.BoolVar(&o.keep, "keep", false, "leave the stack's containers running at the end (for a look at Prometheus)")
	if err := fs.Parse(args); err != nil {
		return o, err
	}
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
	if *switchList != "" {
		for _, name := range strings.Split(*switchList, ",") {
			name = strings.TrimSpace(name)
			if !slices.Contains(stackServices, name) {
				return o, fmt.Errorf("--switch %q: %q is not one of the stack's containers (%s)", *switchList, name, strings.Join(stackServices, ", "))
			}
			if !slices.Contains(o.switched, name) {
				o.switched = append(o.switched, name)
			}
		}
	}
	switch {
	case fs.NArg() > 0:
		return o, fmt.Errorf("unexpected argument %q", fs.Arg(0))
	case o.design != "blocks" && o.design != "trials":
		return o, fmt.Errorf("--design %q: want blocks or trials", o.design)
	case o.design == "blocks" && o.tool == "k6":
		return o, fmt.Errorf("--design blocks needs --tool protobench: k6's remote write cannot be switched within a run")
	case o.design == "blocks" && o.block < o.settle+time.Second:
		return o, fmt.Errorf("--block %s: want at least --settle (%s) plus 1s, so that each block keeps a whole second", o.block, o.settle)
	case o.repeats < 1:
		return o, fmt.Errorf("--repeats %d: want at least 1 (3 or more for an interval), or 0 for the design's default", o.repeats)
	case o.duration < time.Second:
		return o, fmt.Errorf("--duration %s: want at least 1s", o.duration)
	case o.serverCore == o.clientCore:
		return o, fmt.Errorf("--server-core and --client-core are both %d: the server and the generator need a core each", o.serverCore)
	case o.connections < 1:
		return o, fmt.Errorf("--connections %d: want at least 1", o.connections)
	case o.concurrency < 1:
		return o, fmt.Errorf("--concurrency %d: want at least 1", o.concurrency)
	case o.tool != "protobench" && o.tool != "k6":
		return o, fmt.Errorf("--tool %q: want protobench or k6", o.tool)
	case !o.k6RemoteWrite && o.tool != "k6":
		return o, fmt.Errorf("--k6-remote-write=false needs --tool k6: protobench's generator is scraped, not pushed")
	case o.k6PushInterval != "" && (o.tool != "k6" || !o.k6RemoteWrite):
		return o, fmt.Errorf("--k6-push-interval needs --tool k6 with its remote write on")
	case o.cpuShares != 0 && o.cpuShares < 2:
		return o, fmt.Errorf("--cpu-shares %d: want at least 2 (Docker's smallest weight), or 0 for compose's", o.cpuShares)
	}
	for _, d := range []struct{ flag, v string }{{"--scrape-interval", o.scrapeInterval}, {"--housekeeping", o.housekeeping}, {"--k6-push-interval", o.k6PushInterval}} {
		if d.v == "" && d.flag != "--housekeeping" {
			continue
		}
		if v, err := time.ParseDuration(d.v); err != nil || v <= 0 {
			return o, fmt.Errorf("%s %q: want a positive duration such as 1s", d.flag, d.v)
		}
	}
	return o, nil
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
	for _, bin := range []string{"taskset", "docker", "go"} { // taskset pins the server, go builds it
		if _, err := exec.LookPath(bin); err != nil {
			return fmt.Errorf("%s not found: it is needed to pin, build and run the step", bin)
		}
	}
	root, err := repo.Root()
	if err != nil {
		return err
	}
	if o.outDir == "" {
		if o.outDir, err = os.MkdirTemp("", "protobench-obsbench-"); err != nil {
			return err
		}
	} else if err := os.MkdirAll(o.outDir, 0o755); err != nil {
		return err
	}
	if o.obsCPUs == "" {
		o.obsCPUs = stackCores(o.serverCore, o.clientCore, o.tool)
	}
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

	srv, err := startServer(ctx, root, o)
	if err != nil {
		return err
	}
	defer srv.stop()

	wanted := []string{images.Prometheus, images.Cadvisor, images.NodeExporter, images.Protobench}
	if o.tool == "k6" {
		wanted = append(wanted, images.K6)
	}
	set, err := images.Ensure(ctx, images.Options{RepoRoot: root, Only: wanted})
	if err != nil {
		return fmt.Errorf("images: %w", err)
	}
	loadMetrics, err := freeAddr()
	if err != nil {
		return err
	}
	st, err := startStack(ctx, root, o, set, srv.metrics, loadMetrics)
	if err != nil {
		return err
	}
	if !o.keep {
		defer st.remove()
	}
	o.label = st.label
	fmt.Fprintf(stdout, "bench-observability: stack up (Prometheus at http://%s), started with:\n", st.promAddr)
	for _, l := range st.settings {
		fmt.Fprintln(stdout, "  "+l)
	}
	if err := os.WriteFile(filepath.Join(o.outDir, "settings.txt"), []byte(strings.Join(st.settings, "\n")+"\n"), 0o644); err != nil {
		return err
	}

	var trials []trial
	if o.design == "blocks" {
		fmt.Fprintf(stdout, "bench-observability: block design, %d pairs of %s blocks in one %s generator run, %s after each switch left out\n",
			o.repeats, o.block, time.Duration(2*o.repeats+2)*o.block, o.settle)
		if trials, err = runBlocks(ctx, set[images.Protobench].Ref, o, st, srv.addr, loadMetrics, stdout); err != nil {
			return err
		}
	}
	for rep := 0; o.design == "trials" && rep < o.repeats; rep++ {
		order := []bool{true, false}
		if rep%2 == 1 {
			order = []bool{false, true}
		}
		for _, on := range order {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			if err := st.set(ctx, on); err != nil {
				return err
			}
			time.Sleep(o.settle)
			before, began := st.cpu(), time.Now()
			prefix := fmt.Sprintf("r%d-%s", rep, onOff(on))
			var tr trial
			if o.tool == "k6" {
				promURL := ""
				if on && o.k6RemoteWrite {
					promURL = "http://" + st.promAddr
				}
				tr, err = trialSched(o.outDir, prefix, func(cidfile string) (trial, error) {
					return runK6(ctx, o, set[images.K6].Ref, srv.addr, promURL, prefix, cidfile)
				})
			} else {
				tr, err = trialSched(o.outDir, prefix, func(cidfile string) (trial, error) {
					return runLoad(ctx, set[images.Protobench].Ref, o, srv.addr, loadMetrics, filepath.Join(o.outDir, prefix+".json"), cidfile)
				})
			}
			if err != nil {
				return err
			}
			tr.Repeat, tr.StackOn = rep, on
			if on {
				// Over the wall time of the whole trial, the tool's start, warm-up and exit
				// included, since the stack's CPU was read across all of it.
				tr.Cores = map[string]float64{}
				after, span := st.cpu(), time.Since(began).Seconds()
				for name, ns := range after {
					tr.Cores[name] = float64(ns-before[name]) / 1e9 / span
				}
			}
			fmt.Fprintf(stdout, "  repeat %d stack %-3s  %10.0f req/s  p99 %7.3f ms  errors %d\n", rep, onOff(on), tr.RPS, tr.P99Ms, tr.Errors)
			trials = append(trials, tr)
		}
	}
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

// scrapeSizes lists, per scrape job, the samples of its last scrape and how long it took.
func scrapeSizes(ctx context.Context, promURL string) []string {
	pc := prom.New(promURL)
	samples, err := pc.Query(ctx, "sum by (job) (scrape_samples_scraped)", time.Time{})
	if err != nil {
		return nil
	}
	durations, _ := pc.Query(ctx, "max by (job) (scrape_duration_seconds)", time.Time{})
	took := map[string]float64{}
	for _, d := range durations {
		took[d.Labels["job"]] = d.Value
	}
	var out []string
	for _, s := range samples {
		job := s.Labels["job"]
		out = append(out, fmt.Sprintf("%-14s %6.0f samples, %6.1f ms", job, s.Value, 1000*took[job]))
	}
	sort.Strings(out)
	return out
}

// report prints the cost of the stack in throughput and p99 with 95 % intervals and the cores its
// containers used. Each repeat's two trials run back to back, so the cost is taken pair by pair
// (the median of the per-repeat on/off ratios, bootstrapped over repeats): this VM's throughput
// drifts by a third over minutes, and drift that moves both trials of a pair cancels in its ratio.
func report(w io.Writer, trials []trial) {
	var onRPS, offRPS, onP99, offP99 []float64
	cores := map[string][]float64{}
	on, off := map[int]trial{}, map[int]trial{}
	for _, t := range trials {
		if t.StackOn {
			on[t.Repeat] = t
			onRPS, onP99 = append(onRPS, t.RPS), append(onP99, t.P99Ms)
			total := 0.0
			for name, c := range t.Cores {
				cores[name] = append(cores[name], c)
				total += c
			}
			cores["total"] = append(cores["total"], total)
		} else {
			off[t.Repeat] = t
			offRPS, offP99 = append(offRPS, t.RPS), append(offP99, t.P99Ms)
		}
	}
	var pairOnRPS, pairOffRPS, pairOnP99, pairOffP99 []float64
	for rep, a := range on {
		if b, ok := off[rep]; ok {
			pairOnRPS, pairOffRPS = append(pairOnRPS, a.RPS), append(pairOffRPS, b.RPS)
			pairOnP99, pairOffP99 = append(pairOnP99, a.P99Ms), append(pairOffP99, b.P99Ms)
		}
	}
	pairs := len(pairOnRPS)
	rpsRatio, rpsCI := stats.PairedRatio(pairOnRPS, pairOffRPS, 0.95)
	p99Ratio, p99CI := stats.PairedRatio(pairOnP99, pairOffP99, 0.95)
	// Below 3 pairs, a bootstrap interval is the range of two values: no verdict from it.
	if pairs < minTrialsForVerdict {
		rpsCI.OK, p99CI.OK = false, false
	}
	// Throughput lost is 1 - on/off; p99 added is on/off - 1: both positive when watching costs.
	rpsCost, rpsLo, rpsHi := 100*(1-rpsRatio), 100*(1-rpsCI.Hi), 100*(1-rpsCI.Lo)
	p99Cost, p99Lo, p99Hi := 100*(p99Ratio-1), 100*(p99CI.Lo-1), 100*(p99CI.Hi-1)

	fmt.Fprintln(w)
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "\tstack on (median)\tstack off (median)\tcost (paired)\t95 % interval\tverdict")
	fmt.Fprintf(tw, "throughput\t%.0f req/s\t%.0f req/s\t%+.2f %%\t%s\t%s\n", stats.Median(onRPS), stats.Median(offRPS), rpsCost, interval(rpsLo, rpsHi, rpsCI.OK), verdict(rpsCost, rpsHi, rpsCI.OK))
	fmt.Fprintf(tw, "p99 latency\t%.3f ms\t%.3f ms\t%+.2f %%\t%s\t%s\n", stats.Median(onP99), stats.Median(offP99), p99Cost, interval(p99Lo, p99Hi, p99CI.OK), verdict(p99Cost, p99Hi, p99CI.OK))
	tw.Flush()
	fmt.Fprintln(w)
	fmt.Fprintln(w, "cores the stack used while on (mean over trials):")
	for _, name := range []string{"prometheus", "cadvisor", "node-exporter", "total"} {
		if len(cores[name]) > 0 {
			fmt.Fprintf(w, "  %-14s %.3f\n", name, stats.Mean(cores[name]))
		}
	}
	reportWait(w, on, off)
	fmt.Fprintf(w, "\ncost = 1 - on/off for throughput and on/off - 1 for p99: the median over %d pairs of each pair's ratio\n"+
		"(its two arms back to back: two trials, or two adjacent blocks of one run), with a bootstrap interval over pairs; budget %.0f %%.\n", pairs, Budget)
}

// reportWait prints how long the tool's threads waited for a core with the stack on and off, and
// the paired difference: the part of the tool's time the stack took on the core they share.
func reportWait(w io.Writer, on, off map[int]trial) {
	var onWait, offWait, onCores, offCores, onRun, offRun []float64
	for rep, a := range on {
		b, ok := off[rep]
		if !ok || a.Wait == nil || b.Wait == nil {
			continue
		}
		onWait, offWait = append(onWait, a.Wait.WaitMsPerS), append(offWait, b.Wait.WaitMsPerS)
		onCores, offCores = append(onCores, a.Wait.Cores), append(offCores, b.Wait.Cores)
		onRun, offRun = append(onRun, a.Wait.WaitPerRun), append(offRun, b.Wait.WaitPerRun)
	}
	if len(onWait) == 0 {
		return
	}
	d, iv := stats.PairedDifference(onWait, offWait, 0.95)
	if len(onWait) < minTrialsForVerdict {
		iv.OK = false
	}
	fmt.Fprintln(w, "\nthe tool's threads waiting for a core (run-queue delay, /proc/<tid>/schedstat; medians over pairs):")
	fmt.Fprintf(w, "  stack on   %6.2f ms/s (%.1f us a run), on a CPU %.3f cores\n", stats.Median(onWait), stats.Median(onRun), stats.Median(onCores))
	fmt.Fprintf(w, "  stack off  %6.2f ms/s (%.1f us a run), on a CPU %.3f cores\n", stats.Median(offWait), stats.Median(offRun), stats.Median(offCores))
	ci := fmt.Sprintf("n/a (needs %d+ pairs)", minTrialsForVerdict)
	if iv.OK {
		ci = fmt.Sprintf("[%+.2f, %+.2f]", iv.Lo, iv.Hi)
	}
	fmt.Fprintf(w, "  the stack added %+.2f ms/s %s, %.2f %% of the tool's time (paired, %d pairs)\n", d, ci, d/10, len(onWait))
}

func interval(lo, hi float64, ok bool) string {
	if !ok {
		return fmt.Sprintf("n/a (needs %d+ repeats)", minTrialsForVerdict)
	}
	return fmt.Sprintf("[%+.2f, %+.2f] %%", lo, hi)
}

// verdict compares the cost with the budget: within it only when the whole interval is.
func verdict(cost, hi float64, ok bool) string {
	switch {
	case !ok:
		return "no interval"
	case hi < Budget:
		return fmt.Sprintf("under %.0f %%", Budget)
	case cost >= Budget:
		return fmt.Sprintf("OVER %.0f %%", Budget)
	}
	return fmt.Sprintf("not shown under %.0f %% (interval reaches it)", Budget)
}

func onOff(on bool) string {
	if on {
		return "on"
	}
	return "off"
}

// stackCores is where a run on this host puts the observability stack while the tool runs
// (scenario.AutoLayout, then Layout.StackCPUSet): the cores neither the server nor the generator
// has, or, when none is left, the generator's core, so that the server's core stays its own,
// unless the tool is client-bound (k6), whose steps leave the server's core the room.
func stackCores(server, client int, toolName string) string {
	l := scenario.Layout{ServerCPUSet: strconv.Itoa(server), ClientCPUSet: strconv.Itoa(client), ObservabilityCPUSet: otherCores(server, client)}
	if l.ObservabilityCPUSet == "" {
		l.ObservabilityCPUSet = l.ClientCPUSet
	}
	a, ok := tool.Lookup(toolName)
	return l.StackCPUSet(ok && a.Capabilities().ClientBound)
}

// otherCores is every online core but the two given, as a cpuset list; empty when none is left.
func otherCores(a, b int) string {
	n := numCPU()
	var out []string
	for c := 0; c < n; c++ {
		if c != a && c != b {
			out = append(out, strconv.Itoa(c))
		}
	}
	return strings.Join(out, ",")
}

func freeAddr() (string, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer l.Close()
	return l.Addr().String(), nil
}

// server is the gRPC reference server, built from ./servers/grpc and pinned to its core.
type server struct {
	cmd           *exec.Cmd
	exited        chan struct{}
	addr, metrics string
}

func startServer(ctx context.Context, root string, o options) (*server, error) {
	bin := filepath.Join(o.outDir, "protobench-grpc-server")
	build := exec.CommandContext(ctx, "go", "build", "-o", bin, "./servers/grpc")
	build.Dir = root
	if out, err := build.CombinedOutput(); err != nil {
		return nil, fmt.Errorf("go build ./servers/grpc: %v\n%s", err, out)
	}
	addr, err := freeAddr()
	if err != nil {
		return nil, err
	}
	metrics, err := freeAddr()
	if err != nil {
		return nil, err
	}
	s := &server{addr: addr, metrics: metrics, exited: make(chan struct{})}
	s.cmd = exec.Command("taskset", "-c", strconv.Itoa(o.serverCore), bin, "--listen", addr, "--metrics-listen", metrics)
	s.cmd.Env = append(os.Environ(), "GOMAXPROCS=1")
	logPath := filepath.Join(o.outDir, "server.log")
	logFile, err := os.Create(logPath)
	if err != nil {
		return nil, err
	}
	s.cmd.Stdout, s.cmd.Stderr = logFile, logFile
	if err := s.cmd.Start(); err != nil {
		logFile.Close()
		return nil, err
	}
	go func() {
		_ = s.cmd.Wait()
		logFile.Close()
		close(s.exited)
	}()
	if err := waitHTTP(ctx, "http://"+metrics+"/healthz", 20*time.Second, nil); err != nil {
		s.stop()
		return nil, fmt.Errorf("gRPC server not healthy (log: %s): %w", logPath, err)
	}
	return s, nil
}

func (s *server) stop() {
	_ = s.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-s.exited:
	case <-time.After(5 * time.Second):
		_ = s.cmd.Process.Kill()
		<-s.exited
	}
}

// waitHTTP waits until url answers 200. ended, when not nil, is the result of the process that
// should answer: its end stops the wait at once.
func waitHTTP(ctx context.Context, url string, timeout time.Duration, ended <-chan loadResult) error {
	deadline := time.Now().Add(timeout)
	for {
		resp, err := http.Get(url)
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%s did not answer 200 within %s (last error: %v)", url, timeout, err)
		}
		select {
		case r := <-ended:
			return fmt.Errorf("it ended before %s answered: %v", url, r.err)
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// runLoad runs protobench's generator from its image, as a run's loadgen container: on the client
// core with a 1-cpu quota, in a container of its own, so that it weighs against the stack's
// containers on a shared core as it does in a run (a process outside Docker's cgroup would weigh
// against all of Docker's containers together). It serves its live metrics where Prometheus
// scrapes them, and its JSON result lands in the raw folder.
func runLoad(ctx context.Context, image string, o options, target, metrics, out, cidfile string) (trial, error) {
	absDir, err := filepath.Abs(filepath.Dir(out))
	if err != nil {
		return trial{}, err
	}
	args := []string{"run", "--rm", "--network", "host", "--cpuset-cpus", strconv.Itoa(o.clientCore), "--cpus", "1", "--label", o.label,
		"--cidfile", cidfile, "--user", fmt.Sprintf("%d:%d", os.Getuid(), os.Getgid()), "-v", absDir + ":/raw", "--entrypoint", "protobench", image, "load",
		"--target", "grpc://" + target, "--method", "GetUser", "--connections", strconv.Itoa(o.connections), "--concurrency", strconv.Itoa(o.concurrency),
		"--duration", o.duration.String(), "--warmup", o.warmup.String(), "--out", "/raw/" + filepath.Base(out), "--progress", "off",
		"--metrics-listen", metrics, "--label", "scenario=bench-observability"}
	cmd := exec.CommandContext(ctx, "docker", args...)
	cmd.Stdout = io.Discard
	stderr, err := os.Create(out + ".stderr")
	if err != nil {
		return trial{}, err
	}
	defer stderr.Close()
	cmd.Stderr = stderr
	if err := cmd.Run(); err != nil {
		return trial{}, fmt.Errorf("protobench load: %v (see %s.stderr)", err, out)
	}
	b, err := os.ReadFile(out)
	if err != nil {
		return trial{}, err
	}
	var r struct {
		ThroughputRPS float64 `json:"throughput_rps"`
		Requests      int64   `json:"requests"`
		Errors        int64   `json:"errors"`
		DurationS     float64 `json:"duration_s"`
		LatencyMs     struct {
			P99 float64 `json:"p99"`
		} `json:"latency_ms"`
		StartUnix float64       `json:"start_unix"`
		Series    []seriesPoint `json:"series"`
	}
	if err := json.Unmarshal(b, &r); err != nil {
		return trial{}, fmt.Errorf("%s: %w", out, err)
	}
	if r.ThroughputRPS <= 0 || r.DurationS <= 0 || math.IsNaN(r.LatencyMs.P99) {
		return trial{}, fmt.Errorf("%s: no measurement (throughput %.1f over %.1f s)", out, r.ThroughputRPS, r.DurationS)
	}
	return trial{RPS: r.ThroughputRPS, P99Ms: r.LatencyMs.P99, Requests: r.Requests, Errors: r.Errors, Seconds: r.DurationS,
		startUnix: r.StartUnix, series: r.Series}, nil
}
