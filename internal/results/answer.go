package results

import (
	"bytes"
	"fmt"
	"math"
	"sort"
	"strings"

	"github.com/protobench/protobench/internal/record"
	"github.com/protobench/protobench/internal/scenario"
	"github.com/protobench/protobench/internal/stats"
)

// Anchors the answer links to, in summary.md (explicit <a id>) and report.html (element ids).
const (
	AnchorAnswer    = "answer"
	AnchorRatios    = "ratios"
	AnchorEqualLoad = EqualLoadAnchor
	AnchorCPU       = "cpu"
)

// Answer is what summary.md and report.html open with: the headline ratio, latency at equal
// load, and the facts that explain the ratio, each pointing to where the detail is.
type Answer struct {
	Headline *RatioRow // nil when the run compared no two targets
	// EqualLoad is every open-model step variant that drove the headline's two targets at the same
	// offered rate, lowest rate first; empty when the run had none.
	EqualLoad []EqualLoadRow
	Why       []Reason
}

// EqualLoadRow is one offered rate with both targets' latencies from intended send time, and
// their paired p99 ratio: the two targets' runs of one repeat at that rate, one right after the
// other, so what drifted between repeats moves both.
type EqualLoadRow struct {
	Step       string
	Rate       float64
	Target     *Group
	Baseline   *Group
	Flagged    bool
	TargetName string
	// P99Ratio is target / baseline, the geometric mean of the per-repeat ratios over Pairs
	// repeats, with its paired t interval; Flags are both targets' runs' flags out of Runs.
	P99Ratio float64
	P99CI    stats.Interval
	Pairs    int
	Flags    []FlagCount
	Runs     int
}

// Text says the row as the answer prints it: the paired p99 ratio with its interval (method,
// coverage, n) and the flags of the runs beneath it, then both medians.
func (r EqualLoadRow) Text() string {
	s := fmt.Sprintf("at %s/s p99 %s / %s %s", fmtNum(r.Rate), r.Target.Target, r.Baseline.Target, fmtRatioLabelled(r.P99Ratio, r.P99CI))
	if r.Pairs < 2 {
		s += fmt.Sprintf(" (%d pair: no interval)", r.Pairs)
	}
	s += fmt.Sprintf(" (medians %s ms and %s ms)", fmtNum(r.Target.P99.Median), fmtNum(r.Baseline.P99.Median))
	if len(r.Flags) > 0 {
		s += ", **rests on flagged runs: " + FlagCounts(r.Flags, r.Runs) + "**"
	}
	return s
}

// Reason is one line of "why": a fact about the two targets and the section that shows it.
type Reason struct {
	Text, Anchor string // Anchor is a step anchor or one of the Anchor constants
}

// Answer picks the headline: the first ratio of our generator in a step without a matrix (the
// step report.html badges as headline), else the first ratio of our generator, else the first.
func (s *Summary) Answer() Answer {
	var a Answer
	for i := range s.Ratios {
		r := &s.Ratios[i]
		if r.Tool != PrimaryTool {
			continue
		}
		if st := stepOf(s.Plan, r.Group.BaseStep); st != nil && st.Matrix != nil {
			if a.Headline == nil {
				a.Headline = r
			}
			continue
		}
		a.Headline = r
		break
	}
	if a.Headline == nil && len(s.Ratios) > 0 {
		a.Headline = &s.Ratios[0]
	}
	if a.Headline == nil {
		return a
	}
	h := a.Headline
	a.EqualLoad = equalLoad(s.Groups, h.Target, h.Baseline)
	g, b := h.Group, h.Base
	if g.Topology != "" || b.Topology != "" {
		a.Why = append(a.Why, Reason{fmt.Sprintf("Topology: %s: %s; %s: %s.", g.Target, orDash(g.Topology), b.Target, orDash(b.Topology)), StepAnchor(g.Step)})
	}
	if g.HTTPVersion != "" || b.HTTPVersion != "" {
		a.Why = append(a.Why, Reason{fmt.Sprintf("Transport and encoding: %s against %s.", cellLabel(g), cellLabel(b)), StepAnchor(g.Step)})
	}
	if len(s.Cells) > 0 {
		a.Why = append(a.Why, Reason{"How much of the gap is transport and how much encoding: " + s.Cells[0].Reading, StepAnchor(s.Cells[0].BaseStep)})
	}
	if !math.IsNaN(g.CPUMicrosPerRequest) && !math.IsNaN(b.CPUMicrosPerRequest) && b.CPUMicrosPerRequest > 0 {
		text := fmt.Sprintf("Server CPU per request: %s %s µs, %s %s µs (%s)",
			g.Target, fmtNum(g.CPUMicrosPerRequest), b.Target, fmtNum(b.CPUMicrosPerRequest), fmtRatio(g.CPUMicrosPerRequest/b.CPUMicrosPerRequest))
		a.Why = append(a.Why, Reason{text + cpuReading(g, b), AnchorCPU})
	}
	a.Why = append(a.Why, Reason{"The work per request: " + workLine(g) + "; " + workLine(b) + ".", AnchorRatios})
	return a
}

// cpuReading is what the CPU per request says of the throughput ratio, only as far as the runs
// support it: "throughput follows its inverse" holds when both servers' cores were full (no run
// flagged unsaturated) and the load tool was not at its own cap (no run flagged client-bound);
// otherwise the sentence says which condition failed instead.
func cpuReading(gs ...*Group) string {
	var missing []string
	for _, flag := range []string{record.FlagUnsaturated, record.FlagClientBound} {
		for _, g := range gs {
			if g.hasFlag(flag) {
				missing = append(missing, fmt.Sprintf("%s runs of %s", flag, g.Target))
			}
		}
	}
	if len(missing) == 0 {
		return "; with the server's core full and the load tool not bound, throughput follows its inverse."
	}
	return "; throughput need not follow its inverse here: " + strings.Join(missing, ", ") + "."
}

// hasFlag says whether any of the group's runs carries flag.
func (g *Group) hasFlag(flag string) bool {
	for _, f := range g.Flags {
		if f.Flag == flag && f.Count > 0 {
			return true
		}
	}
	return false
}

// equalLoad pairs our generator's open-model groups of the two targets that ran at the same rate
// in the same base step.
func equalLoad(groups []*Group, target, baseline string) []EqualLoadRow {
	type key struct {
		base string
		rate float64
	}
	found := map[key]*EqualLoadRow{}
	var keys []key
	for _, g := range groups {
		if g.Tool != PrimaryTool || g.Model != scenario.ModelOpen || g.Rate <= 0 || g.Throughput.N == 0 {
			continue
		}
		if g.Target != target && g.Target != baseline {
			continue
		}
		k := key{g.BaseStep, g.Rate}
		row, ok := found[k]
		if !ok {
			row = &EqualLoadRow{Step: g.Step, Rate: g.Rate, TargetName: target}
			found[k] = row
			keys = append(keys, k)
		}
		if g.Target == target {
			row.Target = g
		} else {
			row.Baseline = g
		}
		row.Flagged = row.Flagged || len(g.Flags) > 0
	}
	sort.SliceStable(keys, func(i, j int) bool { return keys[i].rate < keys[j].rate })
	var out []EqualLoadRow
	for _, k := range keys {
		if r := found[k]; r.Target != nil && r.Baseline != nil {
			num, den := pairedValues(r.Target, r.Baseline, scenario.MetricLatencyP99Ms)
			r.Pairs = len(num)
			r.P99Ratio, r.P99CI = stats.PairedRatio(num, den, CILevel)
			r.Flags, r.Runs = mergeFlags(r.Target, r.Baseline), r.Target.Runs+r.Baseline.Runs
			out = append(out, *r)
		}
	}
	return out
}

// NoEqualLoad says why there is no latency at equal load, and how to get it.
const NoEqualLoad = "not in this run: no step drove both targets at the same offered rate in the open model. " +
	"Closed-loop latency is not a substitute: at a fixed number in flight, mean latency is in flight / throughput (Little's law), " +
	"so it restates the throughput ratio. A step with model: open and a rate sweep gives it."

func writeAnswer(b *bytes.Buffer, s *Summary) {
	a := s.Answer()
	if a.Headline == nil {
		return
	}
	h := a.Headline
	fmt.Fprintf(b, "<a id=\"%s\"></a>\n## The answer\n\n", AnchorAnswer)
	if h.Unequal != "" {
		fmt.Fprintf(b, "- **Throughput, %s / %s** ([%s](#%s)): no ratio, %s.", h.Target, h.Baseline, h.Step, AnchorRatios, h.Unequal)
	} else {
		fmt.Fprintf(b, "- **Throughput, %s / %s** ([%s](#%s)): %s paired; unpaired %s.",
			h.Target, h.Baseline, h.Step, AnchorRatios, fmtRatioLabelled(h.ThroughputPaired, h.ThroughputPairedCI), fmtRatioLabelled(h.Throughput, h.ThroughputCI))
	}
	if h.Flagged() {
		fmt.Fprintf(b, " **Rests on flagged runs: %s.**", FlagCounts(h.Flags, h.Runs))
	}
	b.WriteString("\n")
	fmt.Fprintf(b, "- **Latency at equal load** ([table](#%s)): ", AnchorEqualLoad)
	if len(a.EqualLoad) == 0 {
		b.WriteString(NoEqualLoad + "\n")
	} else {
		for i, r := range a.EqualLoad {
			if i > 0 {
				b.WriteString("; ")
			}
			b.WriteString(r.Text())
		}
		b.WriteString(" (open model, from intended send time; paired: the two targets' runs of one repeat).\n")
	}
	for _, w := range a.Why {
		fmt.Fprintf(b, "- Why: %s ([detail](%s#%s))\n", w.Text, ReportFile, w.Anchor)
	}
	b.WriteString("\n")
}

func joinNonEmpty(a, b string) string {
	if a == "" {
		return b
	}
	return a + "; " + b
}
