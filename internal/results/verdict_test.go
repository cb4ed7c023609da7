package results

import (
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/protobench/protobench/internal/record"
	"github.com/protobench/protobench/internal/scenario"
	"github.com/protobench/protobench/internal/stats"
)

// VerdictText gives a verdict only from an interval that reaches 95 %, and keeps the
// interval's label either way.
func TestVerdictText(t *testing.T) {
	gain := stats.Interval{Lo: 5, Hi: 30, OK: true, Method: stats.MethodPairedLog, Coverage: 0.95, N: 3}
	three := stats.MedianCI([]float64{900, 1000, 1100}, CILevel)
	six := stats.MedianCI([]float64{900, 950, 1000, 1050, 1100, 1150}, CILevel)
	for _, c := range []struct {
		name        string
		ours, pub   float64
		iv          stats.Interval
		what        string
		want        Verdict
		text, label string
	}{
		{"gain inside", 12, 18, gain, "gain", VerdictConsistent,
			"consistent: the published value is inside our interval of the gain", "(paired t on logs, 95.0 % at n=3 pairs)"},
		{"gain outside, ours higher", 40, 18, stats.Interval{Lo: 35, Hi: 45, OK: true, Method: stats.MethodPairedLog, Coverage: 0.95, N: 3}, "gain",
			VerdictHigher, "ours higher: the published value is outside our interval of the gain", "n=3 pairs"},
		{"median n=6, ours lower", 1025, 1200, six, "median", VerdictLower,
			"ours lower: the published value is outside our interval of the median", "([min,max], 96.9 % at n=6)"},
		{"median n=6 inside", 1025, 1000, six, "median", VerdictConsistent,
			"consistent: the published value is inside our interval of the median", "96.9 % at n=6"},
		{"median n=3 outside", 1000, 1200, three, "median", VerdictWithheld,
			"no verdict: our interval of the median ([min,max], 75.0 % at n=3) covers less than the 95 % a verdict needs; " +
				"the published value lies outside it", ""},
		{"median n=3 inside", 1000, 1050, three, "median", VerdictWithheld,
			"no verdict: our interval of the median ([min,max], 75.0 % at n=3) covers less than the 95 % a verdict needs; " +
				"the published value lies inside it", ""},
		{"untested method", 12, 40, stats.Interval{Lo: 5, Hi: 30, OK: true, Method: stats.MethodModerated, Coverage: 0.95, N: 3, N2: 3}, "gain",
			VerdictWithheld, "no verdict: our interval of the gain (t on logs, 95.0 % at n=3+3) has no A/A test", "lies outside it"},
		{"one repeat", 12, 18, stats.Interval{N: 1}, "gain", VerdictNoInterval, "no verdict: one repeat, no interval (ours is lower)", ""},
		{"no value", math.NaN(), 18, gain, "gain", VerdictNoValue, "no value of ours", ""},
	} {
		v, got := Judge(c.ours, c.pub, c.iv), VerdictText(c.ours, c.pub, c.iv, c.what)
		if v != c.want || !strings.HasPrefix(got, c.text) || !strings.Contains(got, c.label) {
			t.Errorf("%s: %v %q, want %v starting %q and naming %q", c.name, v, got, c.want, c.text, c.label)
		}
	}
}

// verdictTrials is the number of simulated runs behind each rate of TestPublishedVerdictAA.
const verdictTrials = 20000

// verdictRates simulates verdictTrials runs and puts each through the real path from a group's
// repeats to a verdict; it returns the share of runs that called ours higher or lower and the
// share that got any verdict at all.
func verdictRates(trials int, run func() Verdict) (called, given float64) {
	c, g := 0, 0
	for range trials {
		switch v := run(); {
		case v.Called():
			c++
			g++
		case v == VerdictConsistent:
			g++
		}
	}
	return float64(c) / float64(trials), float64(g) / float64(trials)
}

// groupOf fills g with n valid repeats numbered from first, throughput from rps.
func groupOf(g *Group, n, first int, rps func(i int) float64) *Group {
	g.valid = g.valid[:0]
	for i := range n {
		g.valid = append(g.valid, record.Record{Repeat: first + i, ThroughputRPS: rps(i)})
	}
	return g
}

// TestPublishedVerdictAA is the A/A test of the published-vs-ours verdict: the article's value
// is made the truth, so every "ours higher" or "ours lower" is a false alarm, and their rate
// must stay within 5 % (plus three standard errors of the simulation). Each simulated run goes
// through the code a real one does: a group's repeats, medianFigure or throughputGain, Judge.
// The same simulation with the truth 20 % away from the published value gives the power.
//
//   - A plain figure: n repeats of a throughput from a log-normal (CV about 10 %) whose median is
//     the published 12,000 req/s.
//   - A gain (throughput_gain_percent): n repeats of two variants run side by side, each pair
//     sharing a drift (σ 0.2 on the log scale) six to seven times the noise within the pair (σ
//     0.03), the first variant's throughput the published +18 % above the second's.
//   - The gain's fallback when the variants share fewer than 2 repeats: the same two variants
//     from different repeats, so the drift does not cancel, judged by Welch's t on logs.
func TestPublishedVerdictAA(t *testing.T) {
	const published, gain = 12000.0, 18.0
	fig := scenario.Figure{Name: "qps", Metric: scenario.MetricThroughputRPS, Value: published, Unit: "req/s"}
	gainFig := scenario.Figure{Name: "reuse", Metric: scenario.MetricThroughputGainPercent, Value: gain, Unit: "%"}
	se := math.Sqrt(0.05 * 0.95 / verdictTrials)
	limit := 0.05 + 3*se
	var g, num, den Group

	median := func(rng *rand.Rand, n int, truth float64) func() Verdict {
		return func() Verdict {
			ours, ci := medianFigure(groupOf(&g, n, 1, func(int) float64 { return truth * math.Exp(0.1*rng.NormFloat64()) }), fig, CILevel)
			return Judge(ours, fig.Value, ci)
		}
	}
	// gainRun simulates the two variants; paired puts them in the same repeats.
	gainRun := func(rng *rand.Rand, n int, ratio float64, paired bool) func() Verdict {
		return func() Verdict {
			drift := make([]float64, 2*n)
			for i := range drift {
				drift[i] = math.Exp(0.2 * rng.NormFloat64())
			}
			denFirst, denDrift := 1, drift[:n]
			if !paired {
				denFirst, denDrift = n+1, drift[n:]
			}
			groupOf(&num, n, 1, func(i int) float64 { return ratio * 10000 * drift[i] * math.Exp(0.03*rng.NormFloat64()) })
			groupOf(&den, n, denFirst, func(i int) float64 { return 10000 * denDrift[i] * math.Exp(0.03*rng.NormFloat64()) })
			ours, ci := throughputGain(&num, &den)
			if paired && ci.Method != stats.MethodPairedLog || !paired && ci.Method != stats.MethodWelchLog {
				t.Fatalf("paired %v, n=%d: interval %+v", paired, n, ci)
			}
			return Judge(ours, gainFig.Value, ci)
		}
	}
	// Each case gives a verdict from fromN repeats on (below that its interval covers less than
	// 95 %), and finds a true value 20 % away at least minPower of the time where it does.
	cases := []struct {
		name     string
		ns       []int
		sim      func(rng *rand.Rand, n int, away float64) func() Verdict
		truth    string
		fromN    int
		minPower float64
	}{
		{"median", []int{2, 3, 5, 6, 10}, func(rng *rand.Rand, n int, away float64) func() Verdict {
			return median(rng, n, published*away)
		}, "median 12,000 req/s", 6, 0.5},
		{"gain, paired", []int{3, 5, 10}, func(rng *rand.Rand, n int, away float64) func() Verdict {
			return gainRun(rng, n, (1+gain/100)*away, true)
		}, "gain +18 %", 2, 0.5},
		{"gain, unpaired fallback", []int{2, 3, 5}, func(rng *rand.Rand, n int, away float64) func() Verdict {
			return gainRun(rng, n, (1+gain/100)*away, false)
		}, "gain +18 %", 2, 0},
	}
	for ci, c := range cases {
		for _, n := range c.ns {
			rng := rand.New(rand.NewPCG(uint64(ci+1), uint64(n)))
			aa, aaGiven := verdictRates(verdictTrials, c.sim(rng, n, 1))
			power, powerGiven := verdictRates(verdictTrials, c.sim(rng, n, 1.2))
			t.Logf("%-24s n=%2d: A/A (true %s) called higher/lower %5.2f %% (verdict given %6.2f %%); "+
				"truth 1.2× the published: called %6.2f %% (verdict given %6.2f %%)", c.name, n, c.truth, 100*aa, 100*aaGiven, 100*power, 100*powerGiven)
			if aa > limit {
				t.Errorf("%s, n=%d: false-alarm rate %.4f, above %.4f (5 %% + 3 standard errors)", c.name, n, aa, limit)
			}
			// A rule that never gave a verdict, or always said consistent, would pass the A/A
			// test: where the interval reaches 95 % a verdict must be given and find a 20 %
			// difference often, and below it none may be given.
			want := 0.0
			if n >= c.fromN {
				want = 1
			}
			if aaGiven != want || powerGiven != want {
				t.Errorf("%s, n=%d: verdict given in %.4f and %.4f of runs, want %v", c.name, n, aaGiven, powerGiven, want)
			}
			if n >= c.fromN && power < c.minPower {
				t.Errorf("%s, n=%d: a 20 %% difference called in %.4f of runs, want at least %v", c.name, n, power, c.minPower)
			}
		}
	}
}

// TestAtMaxVerdictAA: a figure picked `at: max` is the largest of k configurations' medians,
// biased upward. A/A: k = 4 configurations all at the published value (CV 10 %), n repeats
// each; ours is the largest median. Judged at 95 % as if unpicked, "ours higher" comes far more
// often than 5 %; judged at 1 − 5 %/k (FigureRow.Need, Bonferroni), the false alarms stay
// within 5 % plus the simulation's error.
func TestAtMaxVerdictAA(t *testing.T) {
	const k, published = 4, 12000.0
	fig := scenario.Figure{Name: "qps", Metric: scenario.MetricThroughputRPS, Value: published, Unit: "req/s", At: scenario.AtMax}
	limit := 0.05 + 3*math.Sqrt(0.05*0.95/verdictTrials)
	rng := rand.New(rand.NewPCG(38, 2))
	groups := make([]Group, k)
	for _, n := range []int{10, 20} {
		naive, adjusted := 0, 0
		for range verdictTrials {
			var best *Group
			for i := range groups {
				g := groupOf(&groups[i], n, 1, func(int) float64 { return published * math.Exp(0.1*rng.NormFloat64()) })
				g.Throughput.Median = stats.Median(g.values(scenario.MetricThroughputRPS))
				if best == nil || g.Throughput.Median > best.Throughput.Median {
					best = g
				}
			}
			row := FigureRow{Figure: fig, Picked: k}
			ours, ci := medianFigure(best, fig, CILevel)
			if Judge(ours, published, ci).Called() {
				naive++
			}
			ours, ci = medianFigure(best, fig, row.Need())
			if JudgeAt(ours, published, ci, row.Need()).Called() {
				adjusted++
			}
		}
		t.Logf("at: max over %d, n=%d: false alarms %.2f %% judged as if unpicked, %.2f %% with Bonferroni (interval at %.2f %%)",
			k, n, 100*float64(naive)/verdictTrials, 100*float64(adjusted)/verdictTrials, 100*(1-0.05/k))
		if rate := float64(adjusted) / verdictTrials; rate > limit {
			t.Errorf("n=%d: false alarms %.4f with the adjustment, want at most %.4f", n, rate, limit)
		}
	}
}
