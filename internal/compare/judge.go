package compare

import (
	"fmt"
	"math"

	"github.com/protobench/protobench/internal/scenario"
	"github.com/protobench/protobench/internal/stats"
)

// inFamily says whether metric m (0 throughput, 1 p99) of a row is tested, and why not. In the
// closed model p99 is the requests in flight divided by the throughput (Little's law): testing it
// would test the throughput twice. In the open model the throughput is the offered rate: a
// test of it would test the plan.
func inFamily(r Row, m int) (bool, string) {
	open := r.Model == scenario.ModelOpen
	switch {
	case m == 1 && !open:
		return false, "closed-loop p99 restates the throughput (in flight / throughput), so only the throughput is tested"
	case m == 0 && open:
		return false, "in the open model the throughput is the offered rate, so only the latency is tested"
	}
	return true, ""
}

var pickMetric = [2]func(Figures) []float64{
	func(f Figures) []float64 { return f.Throughput },
	func(f Figures) []float64 { return f.P99 },
}

// judge gives every row its verdicts: rows whose sides are one folder each get their minimum
// detectable effect from the between-run spread and no verdict; rows with two or more folders a
// side are tested on the folders' means (stats.LogTests, with the calibration's between-run
// spread as a prior when it has one), every tested change of the comparison adjusted together
// by Benjamini–Hochberg.
func (c *Comparison) judge() {
	type slot struct{ row, metric int }
	var slots []slot
	var samples [2][]stats.TwoSample
	var where [2][]int
	for i, r := range c.Rows {
		for m, pick := range pickMetric {
			ch := c.change(i, m)
			ch.BaseMedian, ch.OtherMedian = stats.Median(pick(r.Base)), stats.Median(pick(r.Other))
			ch.Ratio, ch.P, ch.Adjusted, ch.MDE, ch.PowerAtEffect = math.NaN(), math.NaN(), math.NaN(), math.NaN(), math.NaN()
			if ch.BaseMedian > 0 {
				ch.Ratio = ch.OtherMedian / ch.BaseMedian
			}
			if why := c.untestable(r, m); why != "" {
				ch.Verdict, ch.Why = NoVerdict, why
				if ok, _ := inFamily(r, m); !ok && r.Unequal == "" {
					ch.Verdict = NotTested
				}
				continue
			}
			slots = append(slots, slot{i, m})
			samples[m] = append(samples[m], stats.TwoSample{A: pick(r.Base), B: pick(r.Other)})
			where[m] = append(where[m], i)
		}
	}
	c.Tests = len(slots)
	factor, crit := map[float64]float64{}, map[float64]float64{} // by df: rows share their df
	var ps []float64
	var chs []*Change
	for m := range samples {
		for j, t := range stats.LogTests(samples[m], 1-FDR, c.Opts.Calibration.metric(m)) {
			ch := c.change(where[m][j], m)
			if !t.OK {
				ch.Verdict, ch.Why = NoVerdict, "a side has a value that is not positive"
				continue
			}
			ch.Ratio, ch.CI, ch.P = t.Ratio, t.CI, t.P
			if _, ok := factor[t.DF]; !ok {
				factor[t.DF] = stats.MDEFactor(t.DF, c.alpha(), c.Opts.Power)
				crit[t.DF] = stats.TQuantile(1-c.alpha()/2, t.DF)
			}
			ch.MDE = math.Exp(factor[t.DF] * t.SE)
			ch.PowerAtEffect = stats.PowerAt(math.Log(c.Opts.Effect)/t.SE, crit[t.DF], t.DF)
			ps, chs = append(ps, t.P), append(chs, ch)
		}
	}
	for j, adj := range stats.BenjaminiHochberg(ps) {
		chs[j].Adjusted = adj
		c.verdict(chs[j])
	}
	c.oneRunMDE()
}

// alpha is the level a single row's MDE and power are computed at: the FDR over the number of
// tests (Bonferroni's bound, which BH's power never falls below), so the MDE printed is one the
// comparison really finds.
func (c *Comparison) alpha() float64 { return FDR / math.Max(1, float64(c.Tests)) }

// untestable says why metric m of row r gets no test, or "".
func (c *Comparison) untestable(r Row, m int) string {
	if r.Unequal != "" {
		return r.Unequal
	}
	if ok, why := inFamily(r, m); !ok {
		return why
	}
	switch {
	case r.Model == scenario.ModelOpen && r.Rate != r.OtherRate:
		return fmt.Sprintf("the sides offered different rates (A %.0f/s, %s %.0f/s: each run derives its own from its capacity step); latency at different loads is not a change",
			r.Rate, c.sideName(r.Folder), r.OtherRate)
	case r.Base.N == 0:
		return "no valid measurement in A (failed runs only)"
	case r.Other.N == 0:
		return fmt.Sprintf("no valid measurement in %s (failed runs only)", c.sideName(r.Folder))
	case r.Base.Folders == 1 && r.Other.Folders == 1:
		return oneRunWhy
	case r.Base.Folders < 2 || r.Other.Folders < 2:
		return fmt.Sprintf("%d and %d folders a side: a verdict needs at least 2 a side (or 1 and 1, which gives only the detectable effect)", r.Base.Folders, r.Other.Folders)
	}
	return ""
}

const oneRunWhy = "one run a side: a run is one state of the host, so its repeats cannot say how far two runs differ"

// oneRunMDE gives each row with one folder a side what it could have found: the difference of
// two runs carries twice the between-run variance the calibration measured.
func (c *Comparison) oneRunMDE() {
	for i := range c.Rows {
		for m := range pickMetric {
			ch := c.change(i, m)
			if ch.Why != oneRunWhy {
				continue
			}
			p := c.Opts.Calibration.metric(m)
			if p.DF <= 0 {
				ch.Why += "; the smallest change it could find is unknown: no between-run spread of this metric was measured (bench-aa)"
			} else {
				se := math.Sqrt(2 * p.Var)
				ch.MDE = stats.MDE(se, p.DF, FDR/math.Max(1, float64(c.familySize())), c.Opts.Power)
				ch.Why += fmt.Sprintf("; the smallest change two runs show at %.0f %% power is ±%.1f %% (between-run spread from %s)",
					100*c.Opts.Power, 100*(ch.MDE-1), c.Opts.Calibration.Source)
			}
			ch.Why += ". For a verdict, declare both builds in one step (interleaved, paired: docs/statistics.md) or give two or more folders a side (compare A1 A2 vs B1 B2)"
		}
	}
}

// familySize is how many changes are in the tested family (rows × the metric their model tests).
func (c *Comparison) familySize() int {
	n := 0
	for _, r := range c.Rows {
		for m := range pickMetric {
			if ok, _ := inFamily(r, m); ok {
				n++
			}
		}
	}
	return n
}

// verdict turns an adjusted p-value into a verdict: a change within the host's drift gets none;
// a change not found is "no significant difference" only when the row could have found the
// smallest change that matters (--effect) with the power asked (--power), else "inconclusive".
func (c *Comparison) verdict(ch *Change) {
	row := c.rowOf(ch)
	higherIsBetter := ch == &row.Throughput
	if ch.Adjusted > FDR {
		ch.Verdict = NoDifference
		if !(ch.PowerAtEffect >= c.Opts.Power) {
			ch.Verdict = Inconclusive
			ch.Why = fmt.Sprintf("a change of %.0f %% would be found only %.0f %% of the time (asked %.0f %%)",
				100*(c.Opts.Effect-1), 100*ch.PowerAtEffect, 100*c.Opts.Power)
		}
		return
	}
	// The drift rule on the log scale, where a 20 % rise and its inverse are the same distance;
	// the part of the drift within the index's own noise is not counted.
	if d := c.beyondNoise(row.Folder); c.DriftKnown[row.Folder] && d > 0 && math.Abs(math.Log(ch.Ratio)) <= math.Log1p(d) {
		ch.Verdict = NoVerdict
		ch.Why = fmt.Sprintf("the change (%+.1f %%) is within the host's own drift between the runs (×%.3f either way, host speed index)", 100*(ch.Ratio-1), 1+d)
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

// sideName names side i by its folders' letters: "B", or "B+C" for a side of two folders.
func (c *Comparison) sideName(i int) string {
	s := ""
	for j, fi := range c.Sides[i] {
		if j > 0 {
			s += "+"
		}
		s += letter(fi)
	}
	return s
}

// beyondNoise is side i's drift beyond the index's own noise: (1+drift)/(1+noise) − 1, at least 0.
func (c *Comparison) beyondNoise(i int) float64 {
	return math.Max(0, (1+c.Drift[i])/(1+c.DriftNoise[i])-1)
}
