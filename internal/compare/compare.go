// Package compare sets two or more results folders side by side, step by step and target by
// target, and says from the confidence intervals whether each change is real: before and after
// a server change, or this machine against a laptop.
package compare

import (
	"fmt"
	"math"
	"sort"

	"github.com/protobench/protobench/internal/report"
	"github.com/protobench/protobench/internal/results"
	"github.com/protobench/protobench/internal/stats"
)

// Verdicts a change can get.
const (
	Faster        = "faster"
	Slower        = "slower"
	NoDifference  = "no significant difference"
	NoVerdict     = "no verdict"
	minSamples    = 2
	samplesRepeat = "repeats"
	samplesSecond = "per-second samples"
)

// Comparison is every folder's figures beside the first's (the baseline).
type Comparison struct {
	Folders []*report.Folder
	Rows    []Row
	// Mismatch says how the folders' scenarios differ; empty when they ran the same scenario.
	Mismatch string
}

// Row is one step, target and tool in one folder against the baseline folder.
type Row struct {
	Step, Target, Tool string
	Folder             int // index into Comparison.Folders, ≥ 1
	Base, Other        Figures
	Throughput, P99    Change
}

// Figures are one side's samples of a step, target and tool.
type Figures struct {
	Throughput, P99 []float64
	// Samples says what the samples are: the repeats' figures, or, with a single repeat, the
	// per-second figures of that run, whose interval is narrower than a repeat's would be
	// because seconds of one run share its server start and its neighbours.
	Samples string
	N       int // repeats
}

// Change is the ratio of the other folder's median to the baseline's with its bootstrap
// interval, and the verdict it supports.
type Change struct {
	BaseMedian, OtherMedian float64
	Ratio                   float64 // other / base
	CI                      stats.Interval
	Verdict                 string
	Why                     string // why there is no verdict
}

// Compare loads the folders and compares each with the first. It refuses folders of different
// scenarios (name or file hash) unless force is set, and then records the mismatch.
func Compare(dirs []string, force bool) (*Comparison, error) {
	if len(dirs) < 2 {
		return nil, fmt.Errorf("compare: need at least two results folders, got %d", len(dirs))
	}
	c := &Comparison{}
	for _, d := range dirs {
		f, err := report.Load(d)
		if err != nil {
			return nil, fmt.Errorf("compare: %w", err)
		}
		c.Folders = append(c.Folders, f)
	}
	c.Mismatch = mismatch(c.Folders)
	if c.Mismatch != "" && !force {
		return nil, fmt.Errorf("compare: the folders ran different scenarios, so their steps do not measure the same thing:\n%s\nUse --force to compare them anyway", c.Mismatch)
	}
	base := c.Folders[0]
	var order []string
	for _, g := range base.Summary.Groups {
		order = append(order, g.Step)
	}
	for i, f := range c.Folders[1:] {
		c.Rows = append(c.Rows, compareFolders(base, f, i+1)...)
	}
	sortRows(c.Rows, order)
	return c, nil
}

func mismatch(folders []*report.Folder) string {
	base := folders[0].Run
	out := ""
	for _, f := range folders[1:] {
		switch {
		case f.Run.Scenario != base.Scenario:
			out += fmt.Sprintf("  %s: scenario %q; %s: scenario %q\n", folders[0].Dir, base.Scenario, f.Dir, f.Run.Scenario)
		case f.Run.ScenarioSHA256 != base.ScenarioSHA256:
			out += fmt.Sprintf("  %s and %s both ran %q, but from different files (sha256 %.12s… and %.12s…): steps may have changed\n",
				folders[0].Dir, f.Dir, base.Scenario, base.ScenarioSHA256, f.Run.ScenarioSHA256)
		}
	}
	return out
}

type key struct{ step, target, tool string }

// compareFolders pairs the groups that both folders measured, in the baseline's order.
func compareFolders(base, other *report.Folder, index int) []Row {
	var rows []Row
	for _, g := range base.Summary.Groups {
		k := key{g.Step, g.Target, g.Tool}
		og := findGroup(other, k)
		if og == nil {
			continue
		}
		b, o := figures(base, k), figures(other, k)
		row := Row{
			Step: k.step, Target: k.target, Tool: k.tool, Folder: index, Base: b, Other: o,
			Throughput: change(b.Throughput, o.Throughput, b.Samples, o.Samples, true),
			P99:        change(b.P99, o.P99, b.Samples, o.Samples, false),
		}
		// Say which side has nothing: a failed run is worth finding in its folder.
		for _, c := range []*Change{&row.Throughput, &row.P99} {
			switch {
			case b.N == 0:
				c.Why = "no valid measurement in A (failed runs only)"
			case o.N == 0:
				c.Why = fmt.Sprintf("no valid measurement in %s (failed runs only)", letter(index))
			}
		}
		rows = append(rows, row)
	}
	return rows
}

func findGroup(f *report.Folder, k key) *results.Group {
	for _, g := range f.Summary.Groups {
		if g.Step == k.step && g.Target == k.target && g.Tool == k.tool {
			return g
		}
	}
	return nil
}

// figures collects a side's samples: one per repeat where there are two or more repeats, else
// the single run's per-second figures when its tool recorded them.
func figures(f *report.Folder, k key) Figures {
	var fig Figures
	var idx []int
	for i, r := range f.Records {
		if r.Step == k.step && r.Target == k.target && r.Tool == k.tool && r.Valid() {
			idx = append(idx, i)
		}
	}
	fig.N = len(idx)
	if len(idx) >= minSamples || len(idx) == 0 {
		fig.Samples = samplesRepeat
		for _, i := range idx {
			fig.Throughput = append(fig.Throughput, f.Records[i].ThroughputRPS)
			fig.P99 = append(fig.P99, f.Records[i].LatencyMs.P99)
		}
		return fig
	}
	i := idx[0]
	secs := f.PerRun[i].Measured()
	if len(secs) < minSamples {
		fig.Samples = samplesRepeat
		fig.Throughput = []float64{f.Records[i].ThroughputRPS}
		fig.P99 = []float64{f.Records[i].LatencyMs.P99}
		return fig
	}
	fig.Samples = samplesSecond
	for _, s := range secs {
		// A second with no completed request says nothing about latency.
		fig.Throughput = append(fig.Throughput, s.ThroughputRPS)
		if s.P99Ms > 0 {
			fig.P99 = append(fig.P99, s.P99Ms)
		}
	}
	return fig
}

// change compares medians by the bootstrap interval of their ratio: an interval wholly above
// or below 1 is a real change at 95 %, one that holds 1 is not.
func change(base, other []float64, baseKind, otherKind string, higherIsBetter bool) Change {
	c := Change{BaseMedian: stats.Median(base), OtherMedian: stats.Median(other)}
	c.Ratio, c.CI = stats.Ratio(other, base, results.CILevel)
	switch {
	case len(base) == 0 || len(other) == 0:
		c.Verdict, c.Why = NoVerdict, "no measurement on one side"
		return c
	case !c.CI.OK:
		c.Verdict, c.Why = NoVerdict, "one repeat and no per-second figures: no interval to judge by"
		return c
	case baseKind != otherKind:
		c.Why = "one side's interval comes from repeats, the other's from the seconds of one run"
	case baseKind == samplesSecond:
		c.Why = "one repeat on each side: the medians and the interval are those of the runs' measured seconds"
	}
	better := c.CI.Lo > 1
	worse := c.CI.Hi < 1
	if !higherIsBetter {
		better, worse = worse, better
	}
	switch {
	case better:
		c.Verdict = Faster
	case worse:
		c.Verdict = Slower
	default:
		c.Verdict = NoDifference
	}
	return c
}

// Percent is the change as a signed percentage, NaN when there is no ratio.
func (c Change) Percent() float64 {
	if math.IsNaN(c.Ratio) {
		return math.NaN()
	}
	return 100 * (c.Ratio - 1)
}

// Steps lists the compared steps in the baseline's order.
func (c *Comparison) Steps() []string {
	var out []string
	seen := map[string]bool{}
	for _, r := range c.Rows {
		if !seen[r.Step] {
			seen[r.Step] = true
			out = append(out, r.Step)
		}
	}
	return out
}

// sortRows keeps the baseline's step order, then folder, target and tool.
func sortRows(rows []Row, order []string) {
	pos := map[string]int{}
	for i, s := range order {
		if _, seen := pos[s]; !seen {
			pos[s] = i
		}
	}
	sort.SliceStable(rows, func(i, j int) bool {
		a, b := rows[i], rows[j]
		if pos[a.Step] != pos[b.Step] {
			return pos[a.Step] < pos[b.Step]
		}
		return a.Folder < b.Folder
	})
}
