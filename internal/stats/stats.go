// Package stats summarises a handful of repeated measurements: median, spread, and confidence
// intervals that make no assumption about the shape of the distribution, because three to five
// benchmark repeats say nothing trustworthy about normality.
package stats

import (
	"math"
	"math/rand/v2"
	"sort"
)

// Bootstrap settings. The seed is fixed so that the same results always print the same
// intervals: a summary that changes on every render would look like new data.
const (
	Resamples = 10000
	seedHi    = 0x70726f746f62656e // "protoben"
	seedLo    = 0x6368000000000001
)

// Mean is the arithmetic mean, NaN for no values.
func Mean(xs []float64) float64 {
	if len(xs) == 0 {
		return math.NaN()
	}
	sum := 0.0
	for _, x := range xs {
		sum += x
	}
	return sum / float64(len(xs))
}

// Median is the middle value (the mean of the two middle ones for an even count), NaN for none.
func Median(xs []float64) float64 {
	n := len(xs)
	if n == 0 {
		return math.NaN()
	}
	s := sorted(xs)
	if n%2 == 1 {
		return s[n/2]
	}
	return (s[n/2-1] + s[n/2]) / 2
}

// StdDev is the sample standard deviation (n-1 in the denominator); 0 for fewer than 2 values.
func StdDev(xs []float64) float64 {
	if len(xs) < 2 {
		return 0
	}
	m := Mean(xs)
	ss := 0.0
	for _, x := range xs {
		ss += (x - m) * (x - m)
	}
	return math.Sqrt(ss / float64(len(xs)-1))
}

// CV is the coefficient of variation, StdDev / Mean; 0 for fewer than 2 values or a zero mean.
func CV(xs []float64) float64 {
	m := Mean(xs)
	if len(xs) < 2 || m == 0 {
		return 0
	}
	return StdDev(xs) / math.Abs(m)
}

// Interval is a confidence interval; OK is false when there were too few values to make one.
type Interval struct {
	Lo, Hi float64
	OK     bool
}

// Contains reports whether x lies in the interval.
func (iv Interval) Contains(x float64) bool {
	return iv.OK && iv.Lo <= x && x <= iv.Hi
}

// MedianCI is the percentile-bootstrap interval of the median at the given level (0.95 for
// 95 %): resample the values with replacement Resamples times, take each resample's median, and
// cut the tails. With 5 values the 95 % interval is exactly [min, max] (each end carries 5.8 %
// of the bootstrap mass, more than the 2.5 % cut), which is the distribution-free interval for a
// median of 5 (coverage 93.75 %); with 3 values it is also [min, max] and honest only as a range.
// Fewer than 2 values give no interval.
func MedianCI(xs []float64, level float64) Interval {
	if len(xs) < 2 {
		return Interval{}
	}
	rng := newRNG()
	stats := make([]float64, Resamples)
	buf := make([]float64, len(xs))
	for i := range stats {
		stats[i] = resampleMedian(rng, xs, buf)
	}
	return percentileInterval(stats, level)
}

// Ratio is median(num) / median(den) with its percentile-bootstrap interval, resampling the two
// samples independently (they come from different servers' runs). The interval is missing when
// either side has fewer than 2 values or a median of zero.
func Ratio(num, den []float64, level float64) (float64, Interval) {
	md := Median(den)
	if len(num) == 0 || len(den) == 0 || md == 0 {
		return math.NaN(), Interval{}
	}
	ratio := Median(num) / md
	if len(num) < 2 || len(den) < 2 {
		return ratio, Interval{}
	}
	rng := newRNG()
	stats := make([]float64, 0, Resamples)
	bn, bd := make([]float64, len(num)), make([]float64, len(den))
	for i := 0; i < Resamples; i++ {
		n, d := resampleMedian(rng, num, bn), resampleMedian(rng, den, bd)
		if d != 0 {
			stats = append(stats, n/d)
		}
	}
	if len(stats) == 0 {
		return ratio, Interval{}
	}
	return ratio, percentileInterval(stats, level)
}

// PairedRatio is the median of the per-pair ratios num[i]/den[i] with its percentile-bootstrap
// interval, resampling whole pairs. It is for measurements taken side by side (the same step with
// and without something, one right after the other): drift that moves both members of a pair
// cancels in their ratio, so the interval reflects only the noise within pairs, where Ratio would
// count the drift between pairs as well. Pairs with a zero denominator are dropped; the interval
// is missing with fewer than 2 pairs left. num and den must be the same length.
func PairedRatio(num, den []float64, level float64) (float64, Interval) {
	if len(num) != len(den) {
		return math.NaN(), Interval{}
	}
	ratios := make([]float64, 0, len(num))
	for i := range num {
		if den[i] != 0 {
			ratios = append(ratios, num[i]/den[i])
		}
	}
	if len(ratios) == 0 {
		return math.NaN(), Interval{}
	}
	return Median(ratios), MedianCI(ratios, level)
}

// PairedDifference is the median of the per-pair differences a[i]-b[i] with its
// percentile-bootstrap interval, resampling whole pairs: PairedRatio's companion for a quantity
// whose zero means "none" (a delay added, not a throughput scaled). The interval is missing with
// fewer than 2 pairs. a and b must be the same length.
func PairedDifference(a, b []float64, level float64) (float64, Interval) {
	if len(a) != len(b) || len(a) == 0 {
		return math.NaN(), Interval{}
	}
	diffs := make([]float64, len(a))
	for i := range a {
		diffs[i] = a[i] - b[i]
	}
	return Median(diffs), MedianCI(diffs, level)
}

// Summary is what a report shows for one metric over repeats.
type Summary struct {
	N      int
	Median float64
	Mean   float64
	StdDev float64
	CV     float64
	Min    float64
	Max    float64
	CI     Interval // 95 % interval of the median
}

// Summarize computes a Summary with a 95 % interval.
func Summarize(xs []float64) Summary {
	if len(xs) == 0 {
		return Summary{Median: math.NaN(), Mean: math.NaN(), Min: math.NaN(), Max: math.NaN()}
	}
	s := sorted(xs)
	return Summary{
		N: len(xs), Median: Median(xs), Mean: Mean(xs), StdDev: StdDev(xs), CV: CV(xs),
		Min: s[0], Max: s[len(s)-1], CI: MedianCI(xs, 0.95),
	}
}

func newRNG() *rand.Rand {
	return rand.New(rand.NewPCG(seedHi, seedLo))
}

func resampleMedian(rng *rand.Rand, xs, buf []float64) float64 {
	for i := range buf {
		buf[i] = xs[rng.IntN(len(xs))]
	}
	return Median(buf)
}

// percentileInterval cuts (1-level)/2 from each tail of the bootstrap distribution, taking the
// order statistics at the cut points (no interpolation, so ends are always observed values).
func percentileInterval(stats []float64, level float64) Interval {
	sort.Float64s(stats)
	n := len(stats)
	alpha := (1 - level) / 2
	lo := int(math.Floor(alpha * float64(n)))
	hi := int(math.Ceil((1-alpha)*float64(n))) - 1
	lo = min(max(lo, 0), n-1)
	hi = min(max(hi, lo), n-1)
	return Interval{Lo: stats[lo], Hi: stats[hi], OK: true}
}

func sorted(xs []float64) []float64 {
	s := append([]float64(nil), xs...)
	sort.Float64s(s)
	return s
}
