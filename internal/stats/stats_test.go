package stats

import (
	"math"
	"math/rand/v2"
	"testing"
)

func TestMedianMeanCV(t *testing.T) {
	cases := []struct {
		name             string
		xs               []float64
		median, mean, cv float64
	}{
		{"odd", []float64{3, 1, 2}, 2, 2, 0.5},            // sd = 1, mean 2
		{"even", []float64{4, 1, 3, 2}, 2.5, 2.5, 0.5164}, // sd = sqrt(5/3) = 1.2910
		{"ten percent exactly", []float64{90, 100, 110}, 100, 100, 0.10},
		{"twenty percent", []float64{80, 100, 120}, 100, 100, 0.20},
		{"one value", []float64{7}, 7, 7, 0},
		{"constant", []float64{5, 5, 5, 5, 5}, 5, 5, 0},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := Median(tc.xs); got != tc.median {
				t.Errorf("Median = %v, want %v", got, tc.median)
			}
			if got := Mean(tc.xs); got != tc.mean {
				t.Errorf("Mean = %v, want %v", got, tc.mean)
			}
			if got := CV(tc.xs); math.Abs(got-tc.cv) > 1e-4 {
				t.Errorf("CV = %v, want %v", got, tc.cv)
			}
		})
	}
	if !math.IsNaN(Median(nil)) || !math.IsNaN(Mean(nil)) {
		t.Error("empty input must give NaN")
	}
	// The noisy threshold is "above 10 %": 90/100/110 sits exactly on it and must not count.
	if CV([]float64{90, 100, 110}) > 0.10 {
		t.Error("CV of 90/100/110 must not exceed 0.10")
	}
}

// TestMedianCoverage checks the binomial coverage of [x(k), x(n+1-k)] against values derived by
// hand: at n = 2 [min, max] holds the median when the two draws fall on both sides of it (½), at
// n = 3 unless all three fall on one side (1 − 2/8), at n = 10 [x(2), x(9)] unless 0 or 1 of
// the ten fall below it, or above (1 − 2·11/1024).
func TestMedianCoverage(t *testing.T) {
	cases := []struct {
		n, k int
		want float64
	}{
		{2, 1, 0.5}, {3, 1, 0.75}, {4, 1, 0.875}, {5, 1, 0.9375}, {10, 2, 1 - 22.0/1024}, {10, 3, 1 - 112.0/1024},
	}
	for _, c := range cases {
		if got := MedianCoverage(c.n, c.k); math.Abs(got-c.want) > 1e-12 {
			t.Errorf("MedianCoverage(%d, %d) = %v, want %v", c.n, c.k, got, c.want)
		}
	}
}

// TestMedianCI checks which order statistics the interval takes and what it says of itself.
func TestMedianCI(t *testing.T) {
	ten := []float64{10, 1, 9, 2, 8, 3, 7, 4, 6, 5}
	cases := []struct {
		name   string
		xs     []float64
		lo, hi float64
		label  string
	}{
		{"two values", []float64{8, 4}, 4, 8, "[min,max], 50.0 % at n=2"},
		{"three values", []float64{100, 90, 120}, 90, 120, "[min,max], 75.0 % at n=3"},
		{"five values", []float64{10, 12, 11, 14, 13}, 10, 14, "[min,max], 93.8 % at n=5"},
		{"ten values", ten, 2, 9, "[x(2),x(9)], 97.9 % at n=10"},
	}
	for _, c := range cases {
		iv := MedianCI(c.xs, 0.95)
		if !iv.OK || iv.Lo != c.lo || iv.Hi != c.hi || iv.Label() != c.label {
			t.Errorf("%s: %+v %q, want [%v, %v] %q", c.name, iv, iv.Label(), c.lo, c.hi, c.label)
		}
	}
	if iv := MedianCI([]float64{7}, 0.95); iv.OK || iv.Label() != "" {
		t.Errorf("one value gave an interval: %+v", iv)
	}
}

// TestMedianCICoverageBySimulation draws skewed (log-normal) samples whose true median is known
// and counts how often the interval holds it: the count must match the coverage the interval
// claims, within four standard errors of the simulation.
func TestMedianCICoverageBySimulation(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	const trials = 20000
	for _, n := range []int{2, 3, 5, 10} {
		hits := 0
		var claimed float64
		xs := make([]float64, n)
		for range trials {
			for i := range xs {
				xs[i] = 1000 * math.Exp(0.3*rng.NormFloat64()) // median 1000
			}
			iv := MedianCI(xs, 0.95)
			claimed = iv.Coverage
			if iv.Contains(1000) {
				hits++
			}
		}
		got := float64(hits) / trials
		se := math.Sqrt(claimed * (1 - claimed) / trials)
		t.Logf("median interval at n=%d: claims %.2f %%, held the median in %.2f %% of %d samples", n, 100*claimed, 100*got, trials)
		if math.Abs(got-claimed) > 4*se {
			t.Errorf("n=%d: coverage %.4f, claimed %.4f", n, got, claimed)
		}
	}
}

// TestRatioCoverageBySimulation does the same for the ratio intervals: Welch's on two samples
// of unequal spread, and the paired one on pairs that share a per-repeat drift far larger than
// the noise within a pair (where an unpaired interval would be useless).
func TestRatioCoverageBySimulation(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	const trials = 20000
	const trueRatio = 1.25
	for _, n := range []int{2, 3, 5, 10} {
		welch, paired := 0, 0
		num, den := make([]float64, n), make([]float64, n)
		for range trials {
			for i := range num {
				num[i] = trueRatio * 1000 * math.Exp(0.05*rng.NormFloat64())
				den[i] = 1000 * math.Exp(0.10*rng.NormFloat64())
			}
			if _, iv := Ratio(num, den, 0.95); iv.Contains(trueRatio) {
				welch++
			}
			for i := range num {
				drift := math.Exp(0.2 * rng.NormFloat64())
				num[i] = trueRatio * 1000 * drift * math.Exp(0.03*rng.NormFloat64())
				den[i] = 1000 * drift * math.Exp(0.03*rng.NormFloat64())
			}
			if _, iv := PairedRatio(num, den, 0.95); iv.Contains(trueRatio) {
				paired++
			}
		}
		w, p := float64(welch)/trials, float64(paired)/trials
		t.Logf("ratio intervals at n=%d: Welch t on logs held the ratio in %.2f %%, paired t in %.2f %% (both claim 95 %%)", n, 100*w, 100*p)
		se := math.Sqrt(0.95 * 0.05 / trials)
		if math.Abs(p-0.95) > 4*se {
			t.Errorf("paired, n=%d: coverage %.4f, want 0.95", n, p)
		}
		// Welch's degrees of freedom are an approximation: it may cover more than it claims
		// (at n = 2 a side it does, by about two points) but not a point less.
		if w < 0.95-0.01-4*se || w > 0.985 {
			t.Errorf("Welch, n=%d: coverage %.4f, want 0.94 to 0.985", n, w)
		}
	}
}

func TestTQuantile(t *testing.T) {
	cases := []struct{ p, df, want float64 }{
		{0.975, 1, 12.7062}, {0.975, 2, 4.3027}, {0.975, 4, 2.7764}, {0.975, 8, 2.3060}, {0.975, 30, 2.0423},
		{0.95, 10, 1.8125}, {0.975, math.Inf(1), 1.9600}, {0.025, 4, -2.7764}, {0.975, 2.5, 3.5746},
	}
	for _, c := range cases {
		if got := TQuantile(c.p, c.df); math.Abs(got-c.want) > 1e-3 {
			t.Errorf("TQuantile(%v, %v) = %.5f, want %.4f", c.p, c.df, got, c.want)
		}
	}
}

func TestRatio(t *testing.T) {
	r, iv := Ratio([]float64{200, 200, 200}, []float64{100, 100, 100}, 0.95)
	if math.Abs(r-2) > 1e-12 || !iv.OK || math.Abs(iv.Lo-2) > 1e-12 || math.Abs(iv.Hi-2) > 1e-12 || iv.Label() != "Welch t on logs, 95.0 % at n=3+3" {
		t.Errorf("constants: %v %+v %q", r, iv, iv.Label())
	}
	// Geometric means: 2·4 and 1·1 give sqrt(8)/1.
	if r, _ := Ratio([]float64{2, 4}, []float64{1, 1}, 0.95); math.Abs(r-math.Sqrt(8)) > 1e-12 {
		t.Errorf("ratio of geometric means = %v, want %v", r, math.Sqrt(8))
	}
	if r, iv := Ratio([]float64{12}, []float64{6, 6}, 0.95); r != 2 || iv.OK {
		t.Errorf("one repeat: %v %+v, want 2 and no interval", r, iv)
	}
	if r, iv := Ratio([]float64{1, 2}, []float64{0, 0}, 0.95); !math.IsNaN(r) || iv.OK {
		t.Errorf("zero denominator: %v %+v", r, iv)
	}
}

// TestPairedRatio: drift that moves both members of each pair leaves the paired interval tight
// where the unpaired one spans the drift; mismatched lengths and zero denominators are refused.
func TestPairedRatio(t *testing.T) {
	var on, off []float64
	for i, level := range []float64{27000, 39000, 31000, 35000, 29000, 37000, 33000} {
		wobble := 1 + 0.002*float64(i%3-1)
		on, off = append(on, 0.98*level*wobble), append(off, level)
	}
	r, iv := PairedRatio(on, off, 0.95)
	if math.Abs(r-0.98) > 0.0025 || !iv.OK || iv.Lo < 0.975 || iv.Hi > 0.985 || iv.Label() != "paired t on logs, 95.0 % at n=7 pairs" {
		t.Errorf("PairedRatio = %v %+v %q, want 0.98 within [0.975, 0.985]", r, iv, iv.Label())
	}
	if _, unpaired := Ratio(on, off, 0.95); unpaired.Hi-unpaired.Lo < 10*(iv.Hi-iv.Lo) {
		t.Errorf("unpaired interval %+v is not much wider than the paired %+v: the test data has no drift", unpaired, iv)
	}
	if r, iv := PairedRatio([]float64{1, 2}, []float64{1}, 0.95); !math.IsNaN(r) || iv.OK {
		t.Errorf("lengths 2 and 1: %v %+v, want NaN and no interval", r, iv)
	}
	if r, iv := PairedRatio([]float64{1, 2}, []float64{0, 2}, 0.95); r != 1 || iv.OK {
		t.Errorf("one usable pair: %v %+v, want 1 and no interval", r, iv)
	}
}

func TestPairedDifference(t *testing.T) {
	// A delay of 2 added to each pair on top of levels that drift far more than 2 between pairs.
	var on, off []float64
	for i, level := range []float64{3, 9, 4, 12, 5, 8, 6} {
		wobble := 0.1 * float64(i%3-1)
		on, off = append(on, level+2+wobble), append(off, level)
	}
	d, iv := PairedDifference(on, off, 0.95)
	if math.Abs(d-2) > 0.1 || !iv.OK || iv.Lo < 1.85 || iv.Hi > 2.15 {
		t.Errorf("PairedDifference = %v %+v, want 2 within [1.85, 2.15]", d, iv)
	}
	if d, iv := PairedDifference([]float64{1, 2}, []float64{1}, 0.95); !math.IsNaN(d) || iv.OK {
		t.Errorf("lengths 2 and 1: %v %+v, want NaN and no interval", d, iv)
	}
	if d, iv := PairedDifference([]float64{5}, []float64{2}, 0.95); d != 3 || iv.OK {
		t.Errorf("one pair: %v %+v, want 3 and no interval", d, iv)
	}
}

func TestSummarize(t *testing.T) {
	s := Summarize([]float64{10, 12, 11, 14, 13})
	if s.N != 5 || s.Median != 12 || s.Mean != 12 || s.Min != 10 || s.Max != 14 || s.CI.Lo != 10 || s.CI.Hi != 14 || s.CI.Coverage != 0.9375 {
		t.Errorf("Summarize = %+v", s)
	}
	if e := Summarize(nil); e.N != 0 || !math.IsNaN(e.Median) {
		t.Errorf("empty = %+v", e)
	}
}
