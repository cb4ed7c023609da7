package stats

import (
	"math"
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

// TestMedianCI checks intervals that can be derived by hand.
//
// n = 5: the bootstrap median equals the smallest value when at least 3 of 5 draws hit it:
// P = C(5,3)·0.2³·0.8² + C(5,4)·0.2⁴·0.8 + 0.2⁵ = 0.0512 + 0.0064 + 0.00032 = 5.79 % > 2.5 %,
// so the 2.5 % cut lands on the minimum, and symmetrically the 97.5 % cut on the maximum.
// n = 3: P(median = min) = P(at least 2 of 3 draws) = 3·(1/3)²·(2/3) + (1/3)³ = 7/27 = 25.9 %.
// n = 2: the resample median is a (1/4), (a+b)/2 (1/2) or b (1/4): the interval is [a, b].
func TestMedianCI(t *testing.T) {
	cases := []struct {
		name   string
		xs     []float64
		lo, hi float64
		ok     bool
	}{
		{"five values", []float64{10, 12, 11, 14, 13}, 10, 14, true},
		{"three values", []float64{100, 90, 120}, 90, 120, true},
		{"two values", []float64{4, 8}, 4, 8, true},
		{"constant", []float64{7, 7, 7, 7}, 7, 7, true},
		{"one value", []float64{7}, 0, 0, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			iv := MedianCI(tc.xs, 0.95)
			if iv.OK != tc.ok || iv.Lo != tc.lo || iv.Hi != tc.hi {
				t.Errorf("MedianCI = %+v, want [%v, %v] ok=%v", iv, tc.lo, tc.hi, tc.ok)
			}
		})
	}
}

// TestMedianCINarrowsWithMoreData: with 20 values the tails are cut inside the range, and the
// same input always gives the same interval (fixed seed).
func TestMedianCINarrowsWithMoreData(t *testing.T) {
	xs := make([]float64, 20)
	for i := range xs {
		xs[i] = float64(i + 1) // median 10.5
	}
	iv := MedianCI(xs, 0.95)
	if !iv.Contains(10.5) || iv.Lo <= 1 || iv.Hi >= 20 {
		t.Errorf("interval %+v should contain 10.5 and exclude the extremes", iv)
	}
	if again := MedianCI(xs, 0.95); again != iv {
		t.Errorf("not deterministic: %+v then %+v", iv, again)
	}
}

// TestRatio: num = {1, 2} has resample medians 1, 1.5, 2 with probabilities 1/4, 1/2, 1/4 and
// den is constant 1, so the ratio is 1.5 and its 95 % interval [1, 2].
func TestRatio(t *testing.T) {
	cases := []struct {
		name          string
		num, den      []float64
		ratio, lo, hi float64
		ok            bool
	}{
		{"spread over constant", []float64{1, 2}, []float64{1, 1}, 1.5, 1, 2, true},
		{"constants", []float64{12, 12, 12}, []float64{6, 6, 6}, 2, 2, 2, true},
		{"five over five", []float64{10, 12, 11, 14, 13}, []float64{5, 5, 5, 5, 5}, 2.4, 2, 2.8, true},
		{"one repeat", []float64{12}, []float64{6, 6}, 2, 0, 0, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r, iv := Ratio(tc.num, tc.den, 0.95)
			if math.Abs(r-tc.ratio) > 1e-12 || iv.OK != tc.ok || math.Abs(iv.Lo-tc.lo) > 1e-12 || math.Abs(iv.Hi-tc.hi) > 1e-12 {
				t.Errorf("Ratio = %v %+v, want %v [%v, %v] ok=%v", r, iv, tc.ratio, tc.lo, tc.hi, tc.ok)
			}
		})
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
	if math.Abs(r-0.98) > 0.0025 || !iv.OK || iv.Lo < 0.975 || iv.Hi > 0.985 {
		t.Errorf("PairedRatio = %v %+v, want 0.98 within [0.975, 0.985]", r, iv)
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
	want := Summary{N: 5, Median: 12, Mean: 12, StdDev: math.Sqrt(2.5), CV: math.Sqrt(2.5) / 12, Min: 10, Max: 14,
		CI: Interval{Lo: 10, Hi: 14, OK: true}}
	if s != want {
		t.Errorf("Summarize = %+v, want %+v", s, want)
	}
	if e := Summarize(nil); e.N != 0 || !math.IsNaN(e.Median) {
		t.Errorf("empty = %+v", e)
	}
}
