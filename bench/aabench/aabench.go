// Package aabench is bench-aa: calibration of the paired verdict on the real compose stack. An
// A/A is one image declared as both builds of `protobench gate`; every call it makes is a false
// alarm, and their rate over many runs, with its exact binomial interval, is what "5 %" really
// is on this host. With head slowed by a known CPU cost per request (handler_cpu), the share of
// runs that find it is the power. Each run's baseline throughput also gives the between-run
// spread that `protobench compare --calibration` uses.
package aabench

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/protobench/protobench/bench/benchcli"
	"github.com/protobench/protobench/internal/compare"
	"github.com/protobench/protobench/internal/gate"
	"github.com/protobench/protobench/internal/stats"
)

// Run is one gate run's outcome as gate.json keeps it.
type Run struct {
	HeadCPU string      `json:"head_cpu"` // "" for the A/A
	Exit    int         `json:"exit"`
	Result  gate.Result `json:"result"`
}

// Called says whether the paired interval excludes 1 (either way): a call of a change.
func (r Run) Called() bool { return r.Result.CI.OK && !r.Result.CI.Contains(1) }

// Found says whether the run found head slower (its interval wholly below 1).
func (r Run) Found() bool { return r.Result.CI.OK && r.Result.CI.Hi < 1 }

type settings struct {
	image, bin, out, threshold string
	runs, repeats              int
	headCPU                    []string
	warmup, duration           time.Duration
	// reuse reads a run folder that already holds a gate.json instead of running it again.
	reuse bool
}

// Command is bench-aa's main.
func Command(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	var s settings
	fs := benchcli.FlagSet("bench-aa", stderr)
	fs.StringVar(&s.image, "image", "", "the server image both builds run (it needs the label "+gate.ProtocolLabel+" or use a Dockerfile)")
	fs.StringVar(&s.bin, "protobench", "bin/protobench", "the protobench binary")
	fs.IntVar(&s.runs, "runs", 20, "gate runs per condition (A/A, and each --head-cpu)")
	fs.IntVar(&s.repeats, "repeats", 5, "repeats per gate run (the gate's default)")
	fs.DurationVar(&s.warmup, "warmup", 3*time.Second, "warm-up of each run")
	fs.DurationVar(&s.duration, "duration", 10*time.Second, "measured time of each run")
	cpus := fs.String("head-cpu", "", "comma-separated handler_cpu values for head (e.g. 1us,2us): the injected slowdowns whose power is measured")
	fs.StringVar(&s.threshold, "fail-if-slower", "5%", "the gate's threshold")
	fs.StringVar(&s.out, "out", "results/bench-aa", "where the runs, calibration.json and aa.md go")
	fs.BoolVar(&s.reuse, "reuse", false, "read a run folder under --out that already holds gate.json (an interrupted bench-aa's) instead of running it again; delete a folder to run it again")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if s.image == "" || s.runs < 1 || s.repeats < 2 {
		fmt.Fprintln(stderr, "bench-aa: --image is required, --runs at least 1 and --repeats at least 2")
		return 2
	}
	if *cpus != "" {
		s.headCPU = strings.Split(*cpus, ",")
	}
	if err := os.MkdirAll(s.out, 0o755); err != nil {
		fmt.Fprintln(stderr, "bench-aa:", err)
		return 1
	}
	var all []Run
	for _, cpu := range append([]string{""}, s.headCPU...) {
		for i := 0; i < s.runs; i++ {
			r, err := s.gateRun(ctx, cpu, i, stderr)
			if err != nil {
				fmt.Fprintln(stderr, "bench-aa:", err)
				return 1
			}
			all = append(all, r)
			fmt.Fprintf(stderr, "bench-aa: head_cpu %q run %d/%d: ratio %.4f %s, %s\n", orAA(cpu), i+1, s.runs, r.Result.Ratio, r.Result.CI.Label(), r.Result.Outcome)
		}
	}
	rep := Summarize(all, s.repeats)
	data, _ := json.MarshalIndent(all, "", "  ")
	os.WriteFile(filepath.Join(s.out, "runs.json"), append(data, '\n'), 0o644)
	cal, _ := json.MarshalIndent(rep.Calibration, "", "  ")
	os.WriteFile(filepath.Join(s.out, "calibration.json"), append(cal, '\n'), 0o644)
	md := rep.Markdown(s, strings.Join(append([]string{"go run ./bench/cmd/bench-aa"}, args...), " "))
	os.WriteFile(filepath.Join(s.out, "aa.md"), md, 0o644)
	stdout.Write(md)
	return 0
}

func orAA(cpu string) string {
	if cpu == "" {
		return "none (A/A)"
	}
	return cpu
}

// gateRun runs the gate once and reads its gate.json. The gate's own exit code says pass,
// slower or inconclusive; every one of them is a measurement here.
func (s settings) gateRun(ctx context.Context, cpu string, i int, log io.Writer) (Run, error) {
	name := "aa"
	if cpu != "" {
		name = "cpu-" + cpu
	}
	out := filepath.Join(s.out, fmt.Sprintf("%s-%02d", name, i+1))
	if s.reuse {
		if r, ok, err := readGateRun(out, cpu); ok || err != nil {
			return r, err
		}
		if _, err := os.Stat(out); err == nil {
			return Run{}, fmt.Errorf("%s holds a gate run that did not finish; delete it to run it again", out)
		}
	}
	args := []string{"gate", "--base", s.image, "--head", s.image, "--fail-if-slower", s.threshold, "--repeats", fmt.Sprint(s.repeats),
		"--warmup", s.warmup.String(), "--duration", s.duration.String(), "--out", out}
	if cpu != "" {
		args = append(args, "--head-env", "PROTOBENCH_HANDLER_CPU="+cpu)
	}
	cmd := exec.CommandContext(ctx, s.bin, args...)
	cmd.Stdout, cmd.Stderr = io.Discard, log
	err := cmd.Run()
	code := 0
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		code = ee.ExitCode()
	} else if err != nil {
		return Run{}, err
	}
	if code != gate.ExitPass && code != gate.ExitSlower && code != gate.ExitInconclusive {
		return Run{}, fmt.Errorf("%s %s: exit %d", s.bin, strings.Join(args, " "), code)
	}
	r, ok, err := readGateRun(out, cpu)
	if err == nil && !ok {
		err = fmt.Errorf("%s: no gate.json", out)
	}
	r.Exit = code
	return r, err
}

// readGateRun reads the gate.json of a gate run's folder; ok is false when there is none. The
// exit code is the outcome's.
func readGateRun(out, cpu string) (Run, bool, error) {
	files, _ := filepath.Glob(filepath.Join(out, "*-gate", "gate.json"))
	if len(files) == 0 {
		return Run{}, false, nil
	}
	if len(files) > 1 {
		return Run{}, false, fmt.Errorf("%s: %d gate.json files, want one", out, len(files))
	}
	data, err := os.ReadFile(files[0])
	if err != nil {
		return Run{}, false, err
	}
	r := Run{HeadCPU: cpu}
	if err := json.Unmarshal(data, &r.Result); err != nil {
		return Run{}, false, fmt.Errorf("%s: %v", files[0], err)
	}
	switch r.Result.Outcome {
	case gate.Pass:
		r.Exit = gate.ExitPass
	case gate.Slower:
		r.Exit = gate.ExitSlower
	default:
		r.Exit = gate.ExitInconclusive
	}
	return r, true, nil
}

// Condition is one head setting's runs summed up.
type Condition struct {
	HeadCPU      string
	Runs, Calls  int
	Rate         stats.Interval // of Calls/Runs (false alarms in the A/A, finds otherwise)
	MeanRatio    float64        // geometric mean of the paired ratios
	GateFailures int            // exit 1
	Inconclusive int            // exit 3
}

// Report is what bench-aa found.
type Report struct {
	Conditions []Condition
	// PairSD is the spread of one pair's log ratio, pooled over the A/A runs; from it, the power
	// at 5 % and 10 % at the runs' repeats and the repeats that 80 % power at 5 % takes.
	PairSD          float64
	Power5, Power10 float64
	RepeatsFor80At5 int
	Calibration     compare.Calibration
	Repeats         int
}

// Summarize counts each condition's calls with a Clopper–Pearson interval, and derives the
// power figures and the between-run spread from the A/A runs.
func Summarize(runs []Run, repeats int) Report {
	rep := Report{Repeats: repeats}
	byCPU := map[string][]Run{}
	var order []string
	for _, r := range runs {
		if _, ok := byCPU[r.HeadCPU]; !ok {
			order = append(order, r.HeadCPU)
		}
		byCPU[r.HeadCPU] = append(byCPU[r.HeadCPU], r)
	}
	for _, cpu := range order {
		rs := byCPU[cpu]
		c := Condition{HeadCPU: cpu, Runs: len(rs)}
		logSum := 0.0
		for _, r := range rs {
			if (cpu == "" && r.Called()) || (cpu != "" && r.Found()) {
				c.Calls++
			}
			switch r.Exit {
			case gate.ExitSlower:
				c.GateFailures++
			case gate.ExitInconclusive:
				c.Inconclusive++
			}
			logSum += math.Log(r.Result.Ratio)
		}
		c.Rate = stats.ClopperPearson(c.Calls, c.Runs, 0.95)
		c.MeanRatio = math.Exp(logSum / float64(len(rs)))
		rep.Conditions = append(rep.Conditions, c)
	}
	aa := byCPU[""]
	var ses, bases []float64
	for _, r := range aa {
		if r.Result.LogSE > 0 && r.Result.Pairs > 1 {
			ses = append(ses, r.Result.LogSE*math.Sqrt(float64(r.Result.Pairs)))
		}
		if r.Result.BaseRPS > 0 {
			bases = append(bases, math.Log(r.Result.BaseRPS))
		}
	}
	if len(ses) > 0 {
		v := 0.0
		for _, s := range ses {
			v += s * s
		}
		rep.PairSD = math.Sqrt(v / float64(len(ses)))
		se := rep.PairSD / math.Sqrt(float64(repeats))
		rep.Power5 = stats.Power(1.05, se, float64(repeats-1), 0.05)
		rep.Power10 = stats.Power(1.10, se, float64(repeats-1), 0.05)
		for n := 2; n <= 1000; n++ {
			if stats.Power(1.05, rep.PairSD/math.Sqrt(float64(n)), float64(n-1), 0.05) >= 0.8 {
				rep.RepeatsFor80At5 = n
				break
			}
		}
	}
	if len(bases) > 1 {
		m := 0.0
		for _, b := range bases {
			m += b / float64(len(bases))
		}
		v := 0.0
		for _, b := range bases {
			v += (b - m) * (b - m) / float64(len(bases)-1)
		}
		rep.Calibration = compare.Calibration{Throughput: stats.Prior{DF: float64(len(bases) - 1), Var: v},
			Source: fmt.Sprintf("bench-aa: %d A/A runs of %d repeats on %s", len(bases), repeats, time.Now().UTC().Format("2006-01-02"))}
	}
	return rep
}

// Markdown is bench-aa's report, with the command that made it.
func (r Report) Markdown(s settings, command string) []byte {
	var b strings.Builder
	fmt.Fprintf(&b, "# bench-aa: the paired verdict on the real stack\n\n`%s`\n\nImage `%s`, %d repeats per gate run, threshold %s.\n\n", command, s.image, s.repeats, s.threshold)
	b.WriteString("| head | runs | called a change (A/A: false alarms; else: found slower) | interval | mean paired ratio | gate exit 1 | gate exit 3 |\n|---|---:|---:|---|---:|---:|---:|\n")
	for _, c := range r.Conditions {
		fmt.Fprintf(&b, "| %s | %d | %d (%.1f %%) | %.1f–%.1f %% (%s, %.0f %% at n=%d) | %.4f | %d | %d |\n", orAA(c.HeadCPU), c.Runs, c.Calls,
			100*float64(c.Calls)/float64(c.Runs), 100*c.Rate.Lo, 100*c.Rate.Hi, c.Rate.Method, 100*c.Rate.Coverage, c.Rate.N, c.MeanRatio, c.GateFailures, c.Inconclusive)
	}
	if r.PairSD > 0 {
		fmt.Fprintf(&b, "\nSpread of one pair's log ratio (A/A, pooled): %.4f. At %d repeats the paired t finds a 5 %% change %.0f %% of the time and a 10 %% change %.0f %% (noncentral t). 80 %% power at 5 %% takes %d repeats.\n",
			r.PairSD, r.Repeats, 100*r.Power5, 100*r.Power10, r.RepeatsFor80At5)
	}
	if r.Calibration.Throughput.DF > 0 {
		fmt.Fprintf(&b, "\nBetween-run variance of a run's throughput (log scale): %.5f on %.0f degrees of freedom; written to calibration.json for `protobench compare --calibration`.\n",
			r.Calibration.Throughput.Var, r.Calibration.Throughput.DF)
	}
	return []byte(b.String())
}
