// Package compare sets results folders side by side, step by step and target by target, and says
// which changes the runs support: before and after a server change, or this machine against a
// laptop. A folder is one state of the host, so at the level that matters one folder is one
// observation: with one folder a side compare prints what it could detect and no verdict; with
// two or more a side it tests the folders' means. It refuses what it cannot judge: folders whose
// settings differ, rows with too few repeats, changes within the host's own drift
// (docs/statistics.md).
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
	Inconclusive = "inconclusive"
	NoVerdict    = "no verdict"
	NotTested    = "not tested"
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
	// DriftNoise is, per side, the host speed index's own noise (the spread of its tries) over
	// the samples the drift compares; a drift within it is not counted.
	DriftNoise []float64
	// Tests is how many changes were tested together (Benjamini–Hochberg's m).
	Tests int
	// Sides lists each side's folders (indices into Folders): Sides[0] is the baseline. Rows'
	// Folder is a side's index.
	Sides [][]int
	Opts  Options
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
	Model              string  // closed or open
	Rate, OtherRate    float64 // offered rate of each side in the open model
	// Unequal is "unequal-work: <what differs>" where the two sides did different work
	// (parity.go); the row then gets no verdict.
	Unequal string
}

// Figures are one side's values of a step, target and tool: with one folder a side its valid
// repeats, with several each folder's geometric mean over its valid repeats. N counts the values,
// Folders the folders and Repeats the valid repeats beneath them.
type Figures struct {
	Throughput, P99 []float64
	N               int
	Folders         int
	Repeats         int
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
	// MDE is the smallest change (a ratio above 1) this row could find with the power asked
	// for (Options.Power); NaN when unknown.
	MDE float64
	// PowerAtEffect is the chance this row finds a change of Options.Effect.
	PowerAtEffect float64
}

// Options are what a user sets: --force, the power a "no significant difference" must have had
// (--power) to find the smallest change that matters (--effect), and the between-run spread
// (--calibration).
type Options struct {
	Force       bool
	Power       float64 // default 0.8
	Effect      float64 // a ratio above 1; default 1.05
	Calibration Calibration
}

func (o Options) withDefaults() Options {
	if o.Power == 0 {
		o.Power = 0.8
	}
	if o.Effect == 0 {
		o.Effect = 1.05
	}
	if o.Calibration == (Calibration{}) {
		o.Calibration = RecordedCalibration
	}
	return o
}

// Compare loads the folders and compares each with the first, one folder a side (the form
// `compare A B C`).
func Compare(dirs []string, force bool) (*Comparison, error) {
	if len(dirs) < 2 {
		return nil, fmt.Errorf("compare: need at least two results folders, got %d", len(dirs))
	}
	sides := [][]string{dirs[:1]}
	for _, d := range dirs[1:] {
		sides = append(sides, []string{d})
	}
	return CompareSides(sides, Options{Force: force})
}

// CompareSides loads each side's folders and compares every other side with the first.
func CompareSides(sides [][]string, opts Options) (*Comparison, error) {
	if len(sides) < 2 {
		return nil, fmt.Errorf("compare: need two sides, got %d", len(sides))
	}
	var folders []*report.Folder
	var idx [][]int
	for _, side := range sides {
		var is []int
		for _, d := range side {
			f, err := report.Load(d)
			if err != nil {
				return nil, fmt.Errorf("compare: %w", err)
			}
			is = append(is, len(folders))
			folders = append(folders, f)
		}
		idx = append(idx, is)
	}
	return CompareLoaded(folders, idx, opts)
}

// CompareLoaded compares loaded folders, grouped into sides by index (sides[0] the baseline).
// It refuses folders of different scenarios or settings unless opts.Force, and then records
// the differences.
func CompareLoaded(folders []*report.Folder, sides [][]int, opts Options) (*Comparison, error) {
	c := &Comparison{Folders: folders, Sides: sides, Opts: opts.withDefaults()}
	c.Mismatch = mismatch(c.Folders)
	for i, f := range c.Folders {
		if line := results.BusyHostLine(f.Records); line != "" {
			c.Warnings = append(c.Warnings, fmt.Sprintf("%s (%s): %s; a verdict against it may measure that load, not a change", letter(i), f.Dir, line))
		}
	}
	if c.Mismatch != "" && !opts.Force {
		return nil, fmt.Errorf("compare: the folders ran different scenarios, so their steps do not measure the same thing:\n%s\nUse --force to compare them anyway", c.Mismatch)
	}
	c.Differences = settingsDiff(c.Folders)
	if len(c.Differences) > 0 && !opts.Force {
		return nil, fmt.Errorf("compare: the folders' settings differ, so a change could come from the settings rather than the code:\n  %s\n"+
			"Use --force to compare them anyway (the differences are then listed above the tables). To compare two builds, "+
			"declare both as targets of one step instead: see docs/statistics.md", joinLines(c.Differences))
	}
	c.Drift, c.DriftKnown, c.DriftNoise = make([]float64, len(sides)), make([]bool, len(sides)), make([]float64, len(sides))
	for i := 1; i < len(sides); i++ {
		var recs []*hostspeed.Record
		for _, fi := range append(append([]int{}, sides[0]...), sides[i]...) {
			recs = append(recs, c.Folders[fi].Run.HostSpeed)
		}
		c.Drift[i], c.DriftKnown[i] = hostspeed.Drift(recs...)
		c.DriftNoise[i] = hostspeed.Noise(recs...)
	}
	base := c.Folders[sides[0][0]]
	var order []string
	for _, g := range base.Summary.Groups {
		order = append(order, g.Step)
	}
	for i := 1; i < len(sides); i++ {
		c.Rows = append(c.Rows, c.compareSides(sides[0], sides[i], i)...)
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

// compareSides pairs the groups that every folder of both sides measured, in the first
// baseline folder's order.
func (c *Comparison) compareSides(base, other []int, index int) []Row {
	var rows []Row
	first := c.Folders[base[0]]
	for _, g := range first.Summary.Groups {
		k := key{g.Step, g.Target, g.Tool}
		all := true
		for _, fi := range append(append([]int{}, base...), other...) {
			if findGroup(c.Folders[fi], k) == nil {
				all = false
			}
		}
		if !all {
			continue
		}
		og := findGroup(c.Folders[other[0]], k)
		rows = append(rows, Row{Step: k.step, Target: k.target, Tool: k.tool, Folder: index, Model: g.Model,
			Rate: g.Rate, OtherRate: og.Rate, Base: c.figures(base, k), Other: c.figures(other, k),
			Unequal: c.unequalWork(base, other, k)})
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

// figures collects a side's values: its valid repeats when the side is one folder, else each
// folder's geometric mean (a folder is one observation of the host).
func (c *Comparison) figures(side []int, k key) Figures {
	var fig Figures
	for _, fi := range side {
		var tp, p99 []float64
		for _, r := range c.Folders[fi].Records {
			if r.Step == k.step && r.Target == k.target && r.Tool == k.tool && r.Valid() {
				tp, p99 = append(tp, r.ThroughputRPS), append(p99, r.LatencyMs.P99)
			}
		}
		fig.Repeats += len(tp)
		if len(side) == 1 {
			fig.Throughput, fig.P99, fig.N, fig.Folders = tp, p99, len(tp), 1
			return fig
		}
		if len(tp) > 0 {
			fig.Throughput, fig.P99 = append(fig.Throughput, geoMean(tp)), append(fig.P99, geoMean(p99))
			fig.N++
			fig.Folders++
		}
	}
	return fig
}

func geoMean(xs []float64) float64 {
	s := 0.0
	for _, x := range xs {
		if x <= 0 {
			return math.NaN()
		}
		s += math.Log(x)
	}
	return math.Exp(s / float64(len(xs)))
}

func (c *Comparison) change(row, metric int) *Change {
	if metric == 0 {
		return &c.Rows[row].Throughput
	}
	return &c.Rows[row].P99
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
