package prom

import (
	"math"
	"testing"
	"time"
)

// TestCounterDeltaInterpolatesAtTheEnds checks a saturated 1-cpu server sampled at uneven times:
// the CPU over [start, end] is the window's length whatever the sample times, where the samples
// inside the window alone would miss up to a second at each end.
func TestCounterDeltaInterpolatesAtTheEnds(t *testing.T) {
	t0 := time.Unix(1000, 0)
	at := func(s float64) time.Time { return t0.Add(time.Duration(s * float64(time.Second))) }
	// One CPU-second per second, sampled at irregular times (a late sample, a repeat gap).
	var pts []Point
	for _, s := range []float64{0.2, 1.1, 2.3, 3.0, 3.95, 5.4, 6.1, 7.9, 8.2} {
		pts = append(pts, Point{T: at(s), V: 50 + s})
	}
	got, ok := CounterDelta([]Series{{Points: pts}}, at(1.5), at(7.5))
	if !ok || math.Abs(got-6) > 1e-6 {
		t.Fatalf("CounterDelta = %v, %v; want 6 CPU-seconds", got, ok)
	}
	// Ends outside the samples extrapolate along the nearest two.
	got, _ = CounterDelta([]Series{{Points: pts}}, at(0), at(9))
	if math.Abs(got-9) > 1e-6 {
		t.Fatalf("CounterDelta beyond the samples = %v; want 9", got)
	}
}

// TestCounterDeltaSumsSeriesAndFoldsResets checks two containers of a service are summed and a
// counter that restarted from zero is not read as a negative delta.
func TestCounterDeltaSumsSeriesAndFoldsResets(t *testing.T) {
	t0 := time.Unix(2000, 0)
	at := func(s float64) time.Time { return t0.Add(time.Duration(s * float64(time.Second))) }
	a := Series{Points: []Point{{T: at(0), V: 10}, {T: at(2), V: 12}, {T: at(4), V: 0.5}, {T: at(6), V: 2.5}}}
	b := Series{Points: []Point{{T: at(0), V: 0}, {T: at(6), V: 3}}}
	got, ok := CounterDelta([]Series{a, b}, at(1), at(5))
	// a: 11 at 1 s; after the reset it reads 12+0.5 at 4 s and 12+1.5 at 5 s → 2.5; b: 2.
	if !ok || math.Abs(got-4.5) > 1e-6 {
		t.Fatalf("CounterDelta = %v, %v; want 4.5", got, ok)
	}
	if _, ok := CounterDelta([]Series{{Points: []Point{{T: at(0), V: 1}}}}, at(1), at(2)); ok {
		t.Fatal("one sample cannot give a delta, want ok=false")
	}
}
