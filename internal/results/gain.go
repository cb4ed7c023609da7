package results

import (
	"fmt"
	"math"

	"github.com/protobench/protobench/internal/scenario"
	"github.com/protobench/protobench/internal/stats"
)

// This file computes the published figures that compare two variants of a step rather than
// one: throughput_gain_percent, e.g. an article's "connection reuse gives +18 % QPS" beside our
// throughput with connections reused over that with a connection per request.

// versusGroup is the group a gain figure divides g by: the variant of g's step that the
// figure's versus picks (scenario.VersusVariant), on g's target with g's tool; nil when it did
// not run or has no valid repeat.
func versusGroup(plan *scenario.Plan, groups []*Group, g *Group, fig scenario.Figure) *Group {
	v, ok := plan.Scenario.Variant(g.Step)
	if !ok {
		return nil
	}
	w, ok := scenario.VersusVariant(v, fig.Versus)
	if !ok {
		return nil
	}
	for _, o := range groups {
		if o.Step == w.Name && o.Target == g.Target && o.Tool == g.Tool && o.Throughput.N > 0 {
			return o
		}
	}
	return nil
}

// throughputGain is num's throughput over den's, less 1, in percent, with its interval. A
// step's repeat runs all its variants before the next repeat starts, so the two variants of one
// repeat ran minutes apart at most: the ratio is paired by repeat, as the ratios between targets
// are (the geometric mean of the per-repeat ratios, a t interval on their logs), and drift
// between repeats cancels in each pair. With fewer than 2 pairs it is the unpaired ratio of the
// geometric means (Welch's t on the logs where each side has 2 repeats).
func throughputGain(num, den *Group) (float64, stats.Interval) {
	a, b := pairedValues(num, den, scenario.MetricThroughputRPS)
	r, iv := stats.PairedRatio(a, b, CILevel)
	if len(a) < 2 {
		r, iv = stats.Ratio(num.values(scenario.MetricThroughputRPS), den.values(scenario.MetricThroughputRPS), CILevel)
	}
	if iv.OK {
		iv.Lo, iv.Hi = gainPercent(iv.Lo), gainPercent(iv.Hi)
	}
	return gainPercent(r), iv
}

// gainPercent turns a ratio into a gain in percent: 1.18 is +18 %.
func gainPercent(ratio float64) float64 { return (ratio - 1) * 100 }

// GainText prints a gain in percent with its interval and what the interval is, as summary.md
// does: "+12.3 % (+5.1 to +20; paired t on logs, 95.0 % at n=3 pairs)", or "+12.3 % (no
// interval: n=1)".
func GainText(gain float64, iv stats.Interval) string {
	if math.IsNaN(gain) {
		return na
	}
	s := signed(gain) + " %"
	if !iv.OK {
		return fmt.Sprintf("%s (no interval: n=%d)", s, iv.N)
	}
	return fmt.Sprintf("%s (%s to %s; %s)", s, signed(iv.Lo), signed(iv.Hi), iv.Label())
}

// signed prints a number with its sign, + included.
func signed(x float64) string {
	if x > 0 {
		return "+" + fmtNum(x)
	}
	return fmtNum(x)
}

// isGain says whether a figure compares two variants (FigureRow.Versus) instead of one.
func isGain(f scenario.Figure) bool { return f.Metric == scenario.MetricThroughputGainPercent }
