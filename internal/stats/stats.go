// Package stats summarises a handful of repeated measurements: median, spread, and intervals
// whose coverage is known and printed with them. A median's interval is an exact pair of order
// statistics (its coverage follows from the binomial distribution, whatever the shape of the
// data), so with three repeats it is [min, max] at 75 %, not "95 %". Ratios are judged on the
// log scale with Student's t, which is exact for log-normal data and close for the skewed,
// positive figures a benchmark produces.
package stats

import (
	"fmt"
	"math"
	"sort"
)

// Methods an Interval names.
const (
	MethodOrderStats = "order statistics (binomial)"
	MethodWelchLog   = "Welch t on log values"
	MethodPairedLog  = "paired t on log ratios"
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

// Interval is a confidence interval with what a reader needs to weigh it: how it was made, the
// probability that intervals made this way hold the true value, and how many values it rests
// on. OK is false when there were too few values to make one.
type Interval struct {
	Lo, Hi   float64
	OK       bool
	Method   string  // one of the Method constants
	Coverage float64 // 0.75 for 75 %: exact for order statistics, nominal for t
	N        int     // values (or pairs) behind it; for two samples the smaller side
	N2       int     // the other side's values for a two-sample interval, else 0
	// Order is the pair of order statistics a median's interval spans (1-based), e.g. 1 and n.
	OrderLo, OrderHi int
}

// Contains reports whether x lies in the interval.
func (iv Interval) Contains(x float64) bool {
	return iv.OK && iv.Lo <= x && x <= iv.Hi
}

// Label says what the interval is in a few words: "[min,max], 75.0 % at n=3",
// "[x(2),x(9)], 97.9 % at n=10", "Welch t on log values, 95.0 % at n=3+3". Empty when there is
// no interval.
func (iv Interval) Label() string {
	if !iv.OK {
		return ""
	}
	cov := fmt.Sprintf("%.1f %%", 100*iv.Coverage)
	switch iv.Method {
	case MethodOrderStats:
		span := fmt.Sprintf("[x(%d),x(%d)]", iv.OrderLo, iv.OrderHi)
		if iv.OrderLo == 1 && iv.OrderHi == iv.N {
			span = "[min,max]"
		}
		return fmt.Sprintf("%s, %s at n=%d", span, cov, iv.N)
	case MethodPairedLog:
		return fmt.Sprintf("paired t on logs, %s at n=%d pairs", cov, iv.N)
	case MethodModerated:
		return fmt.Sprintf("t on logs, %s at n=%d+%d", cov, iv.N2, iv.N)
	case MethodWelchLog:
		return fmt.Sprintf("Welch t on logs, %s at n=%d+%d", cov, iv.N2, iv.N)
	}
	return fmt.Sprintf("%s, %s at n=%d", iv.Method, cov, iv.N)
}

// MedianCoverage is the probability that [x(k), x(n+1-k)] holds the true median of a continuous
// distribution: 1 - 2·P(Binomial(n, ½) < k). It depends on nothing but n and k.
func MedianCoverage(n, k int) float64 {
	if k < 1 || 2*k > n+1 {
		return 0
	}
	tail := 0.0
	for i := 0; i < k; i++ {
		tail += binom(n, i)
	}
	return 1 - 2*tail/math.Pow(2, float64(n))
}

func binom(n, k int) float64 {
	r := 1.0
	for i := 1; i <= k; i++ {
		r = r * float64(n-k+i) / float64(i)
	}
	return r
}

// MedianCI is the exact distribution-free interval of the median: the narrowest symmetric pair of
// order statistics x(k), x(n+1-k) whose coverage reaches level. When even [min, max] falls short
// (n < 6 at 95 %), it is [min, max] with its real, lower coverage: 50 % at n = 2, 75 % at 3,
// 87.5 % at 4, 93.75 % at 5. Fewer than 2 values give no interval.
func MedianCI(xs []float64, level float64) Interval {
	n := len(xs)
	if n < 2 {
		return Interval{N: n}
	}
	k := 1
	for MedianCoverage(n, k+1) >= level {
		k++
	}
	s := sorted(xs)
	return Interval{Lo: s[k-1], Hi: s[n-k], OK: true, Method: MethodOrderStats,
		Coverage: MedianCoverage(n, k), N: n, OrderLo: k, OrderHi: n + 1 - k}
}

// Ratio is the ratio of the geometric means of num and den, exp(mean log num − mean log den),
// with Welch's t interval on the log scale: the two samples come from different servers' runs,
// so neither their variances nor their sizes need match. The interval is missing when either
// side has fewer than 2 values, and the ratio is NaN when a value is not positive.
func Ratio(num, den []float64, level float64) (float64, Interval) {
	ln, okN := logs(num)
	ld, okD := logs(den)
	if !okN || !okD || len(ln) == 0 || len(ld) == 0 {
		return math.NaN(), Interval{}
	}
	d := Mean(ln) - Mean(ld)
	ratio := math.Exp(d)
	if len(ln) < 2 || len(ld) < 2 {
		return ratio, Interval{N: min(len(ln), len(ld))}
	}
	vn, vd := variance(ln)/float64(len(ln)), variance(ld)/float64(len(ld))
	se := math.Sqrt(vn + vd)
	df := welchDF(vn, vd, len(ln), len(ld))
	half := TQuantile(1-(1-level)/2, df) * se
	return ratio, Interval{Lo: math.Exp(d - half), Hi: math.Exp(d + half), OK: true,
		Method: MethodWelchLog, Coverage: level, N: len(ln), N2: len(ld)}
}

// PairedRatio is the geometric mean of the per-pair ratios num[i]/den[i] with a t interval on
// their logs (n−1 degrees of freedom). It is for measurements taken side by side (two targets
// in the same repeat, or a step with and without something): drift that moves both members of a
// pair cancels in their ratio, so the interval reflects only the noise within pairs, where Ratio
// counts the drift between pairs as well. Pairs with a non-positive member are dropped; the
// interval is missing with fewer than 2 pairs left. num and den must be the same length.
func PairedRatio(num, den []float64, level float64) (float64, Interval) {
	if len(num) != len(den) {
		return math.NaN(), Interval{}
	}
	var lr []float64
	for i := range num {
		if num[i] > 0 && den[i] > 0 {
			lr = append(lr, math.Log(num[i]/den[i]))
		}
	}
	if len(lr) == 0 {
		return math.NaN(), Interval{}
	}
	m := Mean(lr)
	if len(lr) < 2 {
		return math.Exp(m), Interval{N: 1}
	}
	half := TQuantile(1-(1-level)/2, float64(len(lr)-1)) * math.Sqrt(variance(lr)/float64(len(lr)))
	return math.Exp(m), Interval{Lo: math.Exp(m - half), Hi: math.Exp(m + half), OK: true,
		Method: MethodPairedLog, Coverage: level, N: len(lr)}
}

// PairedDifference is the median of the per-pair differences a[i]-b[i] with its exact
// order-statistic interval: PairedRatio's companion for a quantity whose zero means "none" (a
// delay added, not a throughput scaled). The interval is missing with fewer than 2 pairs. a and
// b must be the same length.
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
	CI     Interval // exact interval of the median; its Label says its coverage
}

// Level is the coverage the summaries aim for. Order-statistic intervals reach it only from
// n = 6; below that they say their real coverage.
const Level = 0.95

// Summarize computes a Summary, the median's interval aiming at Level.
func Summarize(xs []float64) Summary {
	if len(xs) == 0 {
		return Summary{Median: math.NaN(), Mean: math.NaN(), Min: math.NaN(), Max: math.NaN()}
	}
	s := sorted(xs)
	return Summary{
		N: len(xs), Median: Median(xs), Mean: Mean(xs), StdDev: StdDev(xs), CV: CV(xs),
		Min: s[0], Max: s[len(s)-1], CI: MedianCI(xs, Level),
	}
}

func logs(xs []float64) ([]float64, bool) {
	out := make([]float64, len(xs))
	for i, x := range xs {
		if !(x > 0) {
			return nil, false
		}
		out[i] = math.Log(x)
	}
	return out, true
}

// variance is the sample variance (n−1), 0 for fewer than 2 values.
func variance(xs []float64) float64 {
	sd := StdDev(xs)
	return sd * sd
}

// welchDF is the Welch–Satterthwaite degrees of freedom, with va and vb the squared standard
// errors. Two constant samples have no spread to weigh: any df gives a zero-width interval.
func welchDF(va, vb float64, na, nb int) float64 {
	if va+vb == 0 {
		return float64(na + nb - 2)
	}
	return (va + vb) * (va + vb) / (va*va/float64(na-1) + vb*vb/float64(nb-1))
}

func sorted(xs []float64) []float64 {
	s := append([]float64(nil), xs...)
	sort.Float64s(s)
	return s
}
