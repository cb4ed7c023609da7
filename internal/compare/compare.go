// Package compare sets two or more results folders side by side, step by step and target by
// target, and says which changes the repeats support: before and after a server change, or this
// machine against a laptop. It was tested the way a reader would test it, on A/A pairs (two runs
// of the same code), and it refuses what it cannot judge: folders whose settings differ, rows
// with too few repeats, changes within the host's own drift (docs/statistics.md).
package compare

import (
	"fmt"
	"math"
	"sort"

	"github.com/protobench/protobench/internal/hostspeed"
	"github.com/protobench/protobench/internal/report"
	"github.com/protobench/protobench/internal/results"
	"github.com/protobench/protobench/internal/stats"
)

// Verdicts a change can get.
const (
	Faster       = "faster"
	Slower       = "slower"
	NoDifference = "no significant difference"
	NoVerdict    = "no verdict"
)

// MinRepeats is the fewest valid repeats a side needs for a verdict. Two give a variance on one
// degree of freedom per side and an interval that rests on the log-normal shape alone; the
// seconds of a single run are never a substitute (they share its server start and its
// neighbours, and are autocorrelated).
const MinRepeats = 3

// FDR is the false discovery rate the verdicts hold across all the rows of a comparison.
const FDR = 0.05

// Comparison is every folder's figures beside the first's (the baseline).
type Comparison struct {
	Folders []*report.Folder
	Rows    []Row
	// Mismatch says how the folders' scenarios differ; Differences how their settings do. Both
	// are empty unless --force let the comparison go ahead.
	Mismatch    string
	Differences []string
	// Drift is, per folder (index ≥ 1), how far the host's speed index moved across the
	// baseline's and that folder's samples; DriftKnown is false where a folder recorded none.
	Drift      []float64
	DriftKnown []bool
	// Tests is how many changes were tested together (Benjamini–Hochberg's m), and the priors
	// the moderated t borrowed per metric.
	Tests           int
	ThroughputPrior stats.Prior
	P99Prior        stats.Prior
	// Warnings name the folders with busy-host runs: their verdicts may measure the other
	// load on the machine rather than a change.
	Warnings []string
}

// Row is one step, target and tool in one folder against the baseline folder.
type Row struct {
	Step, Target, Tool string
	Folder             int // index into Comparison.Folders, ≥ 1
	Base, Other        Figures
	Throughput, P99    Change
}

// Figures are one side's valid repeats of a step, target and tool.
type Figures struct {
	Throughput, P99 []float64
	N               int
}

// Change is the ratio of the other folder's geometric mean to the baseline's, its interval, its
// p-value before and after adjustment for the number of tests, and the verdict.
type Change struct {
	BaseMedian, OtherMedian float64
	Ratio                   float64 // other / base
	CI                      stats.Interval
	P, Adjusted             float64
	Verdict                 string
	Why                     string // why there is no verdict
}

// Compare loads the folders and compares each with the first. It refuses folders of different
// scenarios or settings unless force is set, and then records the differences.
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
	for i, f := range c.Folders {
		if line := results.BusyHostLine(f.Records); line != "" {
			c.Warnings = append(c.Warnings, fmt.Sprintf("%s (%s): %s; a verdict against it may measure that load, not a change", letter(i), f.Dir, line))
		}
	}
	if c.Mismatch != "" && !force {
		return nil, fmt.Errorf("compare: the folders ran different scenarios, so their steps do not measure the same thing:\n%s\nUse --force to compare them anyway", c.Mismatch)
	}
	c.Differences = settingsDiff(c.Folders)
	if len(c.Differences) > 0 && !force {
		return nil, fmt.Errorf("compare: the folders' settings differ, so a change could come from the settings rather than the code:\n  %s\n"+
			"Use --force to compare them anyway (the differences are then listed above the tables). To compare two builds, "+
			"declare both as targets of one step instead: see docs/statistics.md", joinLines(c.Differences))
	}
	base := c.Folders[0]
	c.Drift, c.DriftKnown = make([]float64, len(c.Folders)), make([]bool, len(c.Folders))
	for i, f := range c.Folders[1:] {
		c.Drift[i+1], c.DriftKnown[i+1] = hostspeed.Drift(base.Run.HostSpeed, f.Run.HostSpeed)
	}
	var order []string
	for _, g := range base.Summary.Groups {
		order = append(order, g.Step)
	}
	for i, f := range c.Folders[1:] {
		c.Rows = append(c.Rows, compareFolders(base, f, i+1)...)
	}
	sortRows(c.Rows, order)
	c.judge()
	return c, nil
}

func joinLines(xs []string) string {
	out := ""
	for i, x := range xs {
		if i > 0 {
			out += "\n  "
		}
		out += x
	}
	return out
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
		if findGroup(other, k) == nil {
			continue
		}
		b, o := figures(base, k), figures(other, k)
		rows = append(rows, Row{Step: k.step, Target: k.target, Tool: k.tool, Folder: index, Base: b, Other: o})
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

// figures collects a side's valid repeats.
func figures(f *report.Folder, k key) Figures {
	var fig Figures
	for _, r := range f.Records {
		if r.Step == k.step && r.Target == k.target && r.Tool == k.tool && r.Valid() {
			fig.Throughput = append(fig.Throughput, r.ThroughputRPS)
			fig.P99 = append(fig.P99, r.LatencyMs.P99)
			fig.N++
		}
	}
	return fig
}

// judge tests every row with enough repeats, throughput and p99 each with its own moderated t
// (their spreads differ), adjusts all the p-values together by Benjamini–Hochberg, and gives the
// verdicts.
func (c *Comparison) judge() {
	type slot struct {
		row    int
		metric int // 0 throughput, 1 p99
	}
	var slots [2][]slot
	var samples [2][]stats.TwoSample
	for i, r := range c.Rows {
		for m, pick := range []func(Figures) []float64{func(f Figures) []float64 { return f.Throughput }, func(f Figures) []float64 { return f.P99 }} {
			ch := c.change(i, m)
			ch.BaseMedian, ch.OtherMedian = stats.Median(pick(r.Base)), stats.Median(pick(r.Other))
			ch.Ratio, ch.P, ch.Adjusted = math.NaN(), math.NaN(), math.NaN()
			if ch.BaseMedian > 0 {
				ch.Ratio = ch.OtherMedian / ch.BaseMedian
			}
			switch {
			case r.Base.N == 0:
				ch.Verdict, ch.Why = NoVerdict, "no valid measurement in A (failed runs only)"
			case r.Other.N == 0:
				ch.Verdict, ch.Why = NoVerdict, fmt.Sprintf("no valid measurement in %s (failed runs only)", letter(r.Folder))
			case r.Base.N < MinRepeats || r.Other.N < MinRepeats:
				ch.Verdict, ch.Why = NoVerdict, fmt.Sprintf("n=%d and n=%d repeats: a verdict needs at least %d a side (run with --repeat %d or more)",
					r.Base.N, r.Other.N, MinRepeats, MinRepeats)
			default:
				slots[m] = append(slots[m], slot{i, m})
				samples[m] = append(samples[m], stats.TwoSample{A: pick(r.Base), B: pick(r.Other)})
			}
		}
	}
	var tests [2][]stats.Test
	tests[0], c.ThroughputPrior = stats.ModeratedLogTests(samples[0], 1-FDR)
	tests[1], c.P99Prior = stats.ModeratedLogTests(samples[1], 1-FDR)
	var ps []float64
	var where []*Change
	for m := range tests {
		for j, t := range tests[m] {
			ch := c.change(slots[m][j].row, m)
			if !t.OK {
				ch.Verdict, ch.Why = NoVerdict, "a side has a value that is not positive"
				continue
			}
			ch.Ratio, ch.CI, ch.P = t.Ratio, t.CI, t.P
			ps, where = append(ps, t.P), append(where, ch)
		}
	}
	c.Tests = len(ps)
	for j, adj := range stats.BenjaminiHochberg(ps) {
		ch := where[j]
		ch.Adjusted = adj
		c.verdict(ch)
	}
}

func (c *Comparison) change(row, metric int) *Change {
	if metric == 0 {
		return &c.Rows[row].Throughput
	}
	return &c.Rows[row].P99
}

// verdict turns an adjusted p-value into a verdict, unless the change is within the host's drift.
func (c *Comparison) verdict(ch *Change) {
	row := c.rowOf(ch)
	higherIsBetter := ch == &row.Throughput
	if ch.Adjusted > FDR {
		ch.Verdict = NoDifference
		return
	}
	if d := c.Drift[row.Folder]; c.DriftKnown[row.Folder] && math.Abs(ch.Ratio-1) <= d {
		ch.Verdict = NoVerdict
		ch.Why = fmt.Sprintf("the change (%+.1f %%) is within the host's own drift between the runs (%.1f %%, host speed index)", 100*(ch.Ratio-1), 100*d)
		return
	}
	better := ch.Ratio > 1
	if !higherIsBetter {
		better = !better
	}
	if better {
		ch.Verdict = Faster
	} else {
		ch.Verdict = Slower
	}
}

func (c *Comparison) rowOf(ch *Change) *Row {
	for i := range c.Rows {
		if ch == &c.Rows[i].Throughput || ch == &c.Rows[i].P99 {
			return &c.Rows[i]
		}
	}
	panic("compare: change of no row")
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
