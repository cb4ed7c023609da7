package gate

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"

	"github.com/protobench/protobench/internal/results"
	"github.com/protobench/protobench/internal/stats"
)

// Outcomes and their exit codes. An inconclusive gate has its own code so that no CI reads it
// as a pass.
const (
	Pass         = "pass"
	Slower       = "slower"
	Inconclusive = "inconclusive"

	ExitPass         = 0
	ExitSlower       = 1
	ExitUsage        = 2
	ExitInconclusive = 3
	ExitRunFailed    = 4
)

// blocking flags make a gate inconclusive: the runs beneath the ratio did not measure the
// server (the tool at its own cap, requests failing, runs that failed). Flags of a noisy or busy
// host do not block: base and head ran interleaved, so that load falls on both, and what it
// leaves shows in the paired interval, which then reads inconclusive by itself.
var blocking = map[string]bool{"client-bound": true, "errors": true, "failed": true}

// Result is the gate's decision and what it rests on; gate.json holds it for bench-aa.
type Result struct {
	Outcome   string         `json:"outcome"`
	Reason    string         `json:"reason"`
	Threshold float64        `json:"threshold"` // 0.05 for --fail-if-slower 5%
	Ratio     float64        `json:"ratio"`     // head / base throughput, paired
	CI        stats.Interval `json:"interval"`
	Pairs     int            `json:"pairs"`
	// LogSE is the standard error of the paired log ratio, from which bench-aa derives the
	// repeats a power takes.
	LogSE   float64 `json:"log_se"`
	P99     float64 `json:"p99_ratio"`
	P99CI   stats.Interval
	Flags   string `json:"flags,omitempty"`
	Folder  string `json:"folder"`
	Command string `json:"command"`
	// BaseRPS and HeadRPS are the geometric means of each build's repeats (between-run spread
	// for a calibration).
	BaseRPS, HeadRPS float64
}

// Decide reads the paired throughput ratio head/base: slower when its interval lies wholly below
// 1 and the ratio is below 1 − threshold; a pass when the interval's lower end is above
// 1 − threshold (no slowdown of the threshold's size fits the data); inconclusive otherwise, or
// when the runs beneath it carry a flag that says they did not measure the server alone.
func Decide(r *results.RatioRow, threshold float64) Result {
	res := Result{Threshold: threshold, Ratio: math.NaN(), P99: math.NaN()}
	if r == nil {
		res.Outcome, res.Reason = Inconclusive, "the run has no paired ratio of head over base"
		return res
	}
	res.Ratio, res.CI, res.Pairs, res.P99, res.P99CI = r.ThroughputPaired, r.ThroughputPairedCI, r.Pairs, r.P99Paired, r.P99PairedCI
	if r.ThroughputPairedCI.OK {
		half := math.Log(r.ThroughputPairedCI.Hi / r.ThroughputPaired)
		if q := stats.TQuantile(1-(1-r.ThroughputPairedCI.Coverage)/2, float64(r.Pairs-1)); q > 0 {
			res.LogSE = half / q
		}
	}
	var blocked []results.FlagCount
	for _, f := range r.Flags {
		if blocking[f.Flag] {
			blocked = append(blocked, f)
		}
	}
	if len(r.Flags) > 0 {
		res.Flags = results.FlagCounts(r.Flags, r.Runs)
	}
	floor := 1 - threshold
	switch {
	case !r.ThroughputPairedCI.OK:
		res.Outcome, res.Reason = Inconclusive, fmt.Sprintf("%d pairs give no interval (at least 2 are needed)", r.Pairs)
	case len(blocked) > 0:
		res.Outcome, res.Reason = Inconclusive, "the runs beneath the ratio are flagged ("+results.FlagCounts(blocked, r.Runs)+"): they did not measure the servers alone; rerun on a quiet host"
	case r.ThroughputPairedCI.Hi < 1 && r.ThroughputPaired < floor:
		res.Outcome, res.Reason = Slower, fmt.Sprintf("head is slower by %.1f %%, more than the %.1f %% allowed, and the interval lies wholly below 1×", 100*(1-r.ThroughputPaired), 100*threshold)
	case r.ThroughputPairedCI.Lo > floor:
		res.Outcome, res.Reason = Pass, fmt.Sprintf("the interval's lower end (%.3f×) is above %.3f×: no slowdown of %.1f %% or more fits these runs", r.ThroughputPairedCI.Lo, floor, 100*threshold)
	default:
		res.Outcome, res.Reason = Inconclusive, fmt.Sprintf("the interval (%.3f× to %.3f×) holds both no change and a slowdown beyond %.1f %%: more repeats (--repeats) narrow it", r.ThroughputPairedCI.Lo, r.ThroughputPairedCI.Hi, 100*threshold)
	}
	return res
}

// geo is the geometric mean, NaN of nothing.
func geo(xs []float64) float64 {
	if len(xs) == 0 {
		return math.NaN()
	}
	s := 0.0
	for _, x := range xs {
		s += math.Log(x)
	}
	return math.Exp(s / float64(len(xs)))
}

// ExitCode is the outcome's exit code.
func (r Result) ExitCode() int {
	switch r.Outcome {
	case Pass:
		return ExitPass
	case Slower:
		return ExitSlower
	}
	return ExitInconclusive
}

// Markdown is the gate's result as a pull-request comment: the outcome first, then the figures
// with their intervals (method, coverage, n), the flags, the folder and the command.
func (r Result) Markdown() []byte {
	var b bytes.Buffer
	head := map[string]string{Pass: "Pass: no slowdown", Slower: "Fail: head is slower", Inconclusive: "Inconclusive (not a pass)"}[r.Outcome]
	fmt.Fprintf(&b, "### protobench gate: %s\n\n%s.\n\n", head, capitalize(r.Reason))
	b.WriteString("| | head / base | interval |\n|---|---:|---|\n")
	fmt.Fprintf(&b, "| throughput (paired) | %s | %s |\n", ratio(r.Ratio), interval(r.CI))
	fmt.Fprintf(&b, "| p99 latency, closed loop (paired; restates throughput, not judged) | %s | %s |\n\n", ratio(r.P99), interval(r.P99CI))
	fmt.Fprintf(&b, "Threshold: fail if slower by more than %.1f %%. Builds run interleaved in one step (shuffled order within each repeat), %d pairs.", 100*r.Threshold, r.Pairs)
	if r.Flags != "" {
		fmt.Fprintf(&b, " Flags: %s.", r.Flags)
	}
	fmt.Fprintf(&b, "\n\nResults: `%s`. Command: `%s`.\n", r.Folder, r.Command)
	return b.Bytes()
}

func ratio(x float64) string {
	if math.IsNaN(x) {
		return "n/a"
	}
	return fmt.Sprintf("%.3f×", x)
}

func interval(iv stats.Interval) string {
	if !iv.OK {
		return "none"
	}
	return fmt.Sprintf("%.3f× to %.3f× (%s)", iv.Lo, iv.Hi, iv.Label())
}

func capitalize(s string) string {
	if s == "" {
		return s
	}
	return string(bytes.ToUpper([]byte(s[:1]))) + s[1:]
}

// JSON is gate.json.
func (r Result) JSON() []byte {
	data, _ := json.MarshalIndent(r, "", "  ")
	return append(data, '\n')
}
