package results

import (
	"math"

	"github.com/protobench/protobench/internal/parity"
	"github.com/protobench/protobench/internal/scenario"
	"github.com/protobench/protobench/internal/stats"
)

// RatioRow compares one target with the step's baseline target, for one tool: unpaired (all
// repeats of each side) and paired (the two targets' runs of the same repeat).
type RatioRow struct {
	Step, Tool, Target, Baseline string
	Throughput                   float64 // geometric mean(target) / geometric mean(baseline)
	ThroughputCI                 stats.Interval
	P99                          float64
	P99CI                        stats.Interval
	// Paired ratios: geometric means of the per-repeat ratios, over Pairs repeats where both
	// targets have a valid run.
	Pairs                           int
	ThroughputPaired, P99Paired     float64
	ThroughputPairedCI, P99PairedCI stats.Interval
	// Flags are the flags of the runs beneath the ratio, both targets' counted together, out of
	// Runs runs.
	Flags       []FlagCount
	Runs        int
	Group, Base *Group
	// Unequal is "unequal-work: <what differs>" where the two targets' runs did different
	// work (internal/parity): the row then has no ratio at all, since it would not compare
	// the targets alone.
	Unequal string
}

// Flagged says whether any run beneath the ratio carries a flag.
func (r RatioRow) Flagged() bool { return len(r.Flags) > 0 }

// ratios compares every target of a step with its baseline, per tool.
func ratios(plan *scenario.Plan, groups []*Group) []RatioRow {
	type stepTool struct{ step, tool string }
	var keys []stepTool
	byKey := map[stepTool][]*Group{}
	for _, g := range groups {
		k := stepTool{g.Step, g.Tool}
		if _, ok := byKey[k]; !ok {
			keys = append(keys, k)
		}
		byKey[k] = append(byKey[k], g)
	}
	var rows []RatioRow
	for _, k := range keys {
		gs := byKey[k]
		if len(gs) < 2 {
			continue
		}
		base := gs[0]
		if st := stepOf(plan, gs[0].BaseStep); st != nil && st.Baseline != "" {
			for _, g := range gs {
				if g.Target == st.Baseline {
					base = g
				}
			}
		}
		for _, g := range gs {
			if g == base {
				continue
			}
			row := RatioRow{Step: k.step, Tool: k.tool, Target: g.Target, Baseline: base.Target, Group: g, Base: base}
			row.Throughput, row.ThroughputCI = stats.Ratio(g.values(scenario.MetricThroughputRPS), base.values(scenario.MetricThroughputRPS), CILevel)
			row.P99, row.P99CI = stats.Ratio(g.values(scenario.MetricLatencyP99Ms), base.values(scenario.MetricLatencyP99Ms), CILevel)
			num, den := pairedValues(g, base, scenario.MetricThroughputRPS)
			row.Pairs = len(num)
			row.ThroughputPaired, row.ThroughputPairedCI = stats.PairedRatio(num, den, CILevel)
			num, den = pairedValues(g, base, scenario.MetricLatencyP99Ms)
			row.P99Paired, row.P99PairedCI = stats.PairedRatio(num, den, CILevel)
			row.Flags, row.Runs = mergeFlags(g, base), g.Runs+base.Runs
			if row.Unequal = parity.Unequal(g.valid, base.valid); row.Unequal != "" {
				row.withhold()
			}
			rows = append(rows, row)
		}
	}
	return rows
}

// withhold drops every figure of a row whose sides did unequal work: no renderer can then
// print a ratio, only its Unequal text.
func (r *RatioRow) withhold() {
	nan := math.NaN()
	r.Throughput, r.P99, r.ThroughputPaired, r.P99Paired = nan, nan, nan, nan
	r.ThroughputCI, r.P99CI, r.ThroughputPairedCI, r.P99PairedCI = stats.Interval{}, stats.Interval{}, stats.Interval{}, stats.Interval{}
}

// RatioCell is a row's ratio as the reports print it, or its Unequal text.
func (r RatioRow) RatioCell(v float64, iv stats.Interval) string {
	if r.Unequal != "" {
		return r.Unequal
	}
	return fmtRatioLabelled(v, iv)
}

// pairedValues matches the two groups' valid runs by repeat: the runs of one repeat ran one
// right after the other (in shuffled order), so what drifted between repeats moves both.
func pairedValues(g, base *Group, metric string) (num, den []float64) {
	byRepeat := map[int]float64{}
	for _, r := range base.valid {
		if v, ok := MetricValue(r, metric); ok {
			byRepeat[r.Repeat] = v
		}
	}
	for _, r := range g.valid {
		v, ok := MetricValue(r, metric)
		d, both := byRepeat[r.Repeat]
		if ok && both {
			num, den = append(num, v), append(den, d)
		}
	}
	return num, den
}

// mergeFlags counts the flags of both groups' runs together.
func mergeFlags(a, b *Group) []FlagCount {
	counts := map[string]int{}
	var order []string
	for _, g := range []*Group{a, b} {
		for _, f := range g.Flags {
			if _, seen := counts[f.Flag]; !seen {
				order = append(order, f.Flag)
			}
			counts[f.Flag] += f.Count
		}
	}
	sortFlags(order)
	out := make([]FlagCount, len(order))
	for i, f := range order {
		out[i] = FlagCount{f, counts[f]}
	}
	return out
}
