package results

import (
	"fmt"
	"math"

	"github.com/protobench/protobench/internal/scenario"
	"github.com/protobench/protobench/internal/stats"
)

// FigureRow is one published figure beside ours.
type FigureRow struct {
	Figure        scenario.Figure
	Group         *Group  // nil for a cited-only figure or a step that did not run
	Ours          float64 // in the figure's unit; NaN when there is nothing to compare
	Ratio         float64 // ours / theirs
	TheirCores    int
	TheirsPerCore float64 // NaN unless per core means something and the cores are known
	OursPerCore   float64
	// CI is the interval of Ours: the exact order-statistic interval of the median (medianFigure)
	// or, for a gain figure (throughput_gain_percent), the gain's (gain.go). Versus is the group a
	// gain divides Group by; other figures leave it nil. A gain leaves Ratio NaN: a ratio of two
	// gains means little near 0. Judge turns Ours, CI and the figure's value into a verdict.
	Versus *Group
	CI     stats.Interval
	// Picked is how many configurations `at: max` chose ours from (0 or 1: none). The largest of
	// k medians is biased upward, so its verdict needs an interval that covers 1 − 5 %/k
	// (Bonferroni over the k it could have been): Need.
	Picked int
}

// Need is the coverage the row's interval must reach for a verdict: CILevel, or CILevel
// adjusted by Bonferroni over the configurations `at: max` picked ours from.
func (r FigureRow) Need() float64 {
	if r.Picked > 1 {
		return 1 - (1-CILevel)/float64(r.Picked)
	}
	return CILevel
}

// VerdictText says the row's verdict (Judge) in words; "" for a figure not compared (not measured here,
// not run, or a gain with nothing to divide by).
func (r FigureRow) VerdictText() string {
	if r.Group == nil || (isGain(r.Figure) && r.Versus == nil) {
		return ""
	}
	what := "median"
	if isGain(r.Figure) {
		what = "gain"
	}
	text := VerdictTextAt(r.Ours, r.Figure.Value, r.CI, what, r.Need())
	if r.Picked > 1 {
		text += fmt.Sprintf(" (ours is the largest of %d configurations, so the interval must cover %.1f %%: Bonferroni over the %d)", r.Picked, 100*r.Need(), r.Picked)
	}
	return text
}

// published sets each figure beside the matching group of ours.
func published(plan *scenario.Plan, groups []*Group) []FigureRow {
	if plan == nil || plan.Scenario == nil || plan.Scenario.Published == nil {
		return nil
	}
	pub := plan.Scenario.Published
	var rows []FigureRow
	for _, fig := range pub.Figures {
		base := FigureRow{Figure: fig, Ours: math.NaN(), Ratio: math.NaN(), TheirCores: pub.CoresFor(fig),
			TheirsPerCore: math.NaN(), OursPerCore: math.NaN()}
		if fig.Metric == "" {
			rows = append(rows, base)
			continue
		}
		matches, picked := figureGroups(plan, groups, fig)
		if len(matches) == 0 {
			rows = append(rows, base)
			continue
		}
		for _, g := range matches {
			row := base
			row.Group = g
			row.Picked = picked
			if isGain(fig) {
				if row.Versus = versusGroup(plan, groups, g, fig); row.Versus != nil {
					row.Ours, row.CI = throughputGain(g, row.Versus)
				}
				rows = append(rows, row)
				continue
			}
			if v, ci := medianFigure(g, fig, row.Need()); !math.IsNaN(v) {
				row.Ours, row.CI = v, ci
				if fig.Value != 0 {
					row.Ratio = row.Ours / fig.Value
				}
				if scenario.PerCore(fig.Metric) {
					if row.TheirCores > 0 {
						row.TheirsPerCore = fig.Value / float64(row.TheirCores)
					}
					if g.ServerCPUs > 0 {
						row.OursPerCore = row.Ours / g.ServerCPUs
					}
				}
			}
			rows = append(rows, row)
		}
	}
	return rows
}

// medianFigure is the median of g's repeats of the figure's metric, in the figure's unit, with
// its exact order-statistic interval.
func medianFigure(g *Group, fig scenario.Figure, level float64) (float64, stats.Interval) {
	xs := g.values(fig.Metric)
	for i := range xs {
		xs[i] = fig.InUnit(xs[i])
	}
	return stats.Median(xs), stats.MedianCI(xs, level)
}

// figureGroups finds the groups a figure compares with: its step, target and tool (the step's
// primary tool by default), the variants its match selects, narrowed to one by at: max or knee.
// picked is how many variants at: max chose from (0 otherwise).
func figureGroups(plan *scenario.Plan, groups []*Group, fig scenario.Figure) (out []*Group, picked int) {
	st := stepOf(plan, fig.Step)
	if st == nil {
		return nil, 0
	}
	tool := fig.Tool
	if tool == "" {
		for _, v := range st.Variants() {
			for _, t := range v.Tools {
				for _, g := range groups {
					if tool == "" && g.BaseStep == st.Name && g.Target == fig.Target && g.Tool == t {
						tool = t
					}
				}
			}
		}
	}
	for _, g := range groups {
		if g.BaseStep != st.Name || g.Target != fig.Target || g.Tool != tool || g.Throughput.N == 0 {
			continue
		}
		if v, ok := plan.Scenario.Variant(g.Step); ok && !scenario.MatchVariant(fig.Match, v) {
			continue
		}
		out = append(out, g)
	}
	switch fig.At {
	case scenario.AtMax:
		var best *Group
		for _, g := range out {
			if best == nil || g.Throughput.Median > best.Throughput.Median {
				best = g
			}
		}
		if best == nil {
			return nil, 0
		}
		return []*Group{best}, len(out)
	case scenario.AtKnee:
		if k := kneeGroup(out, st.Name, fig.Target, tool, st.KneeP99Ms); k != nil {
			return []*Group{k}, 0
		}
		return nil, 0
	}
	return out, 0
}
