package prom

import (
	"context"
	"sort"
	"time"
)

// CounterMargin is how far beyond a window's ends raw counter samples are fetched, so that a
// sample on each side brackets each end (cAdvisor and node-exporter are scraped every second).
const CounterMargin = 3 * time.Second

// Increase is how much selector's counters grew over [start, end], read as CounterDelta does
// from the raw samples around the window. ok is false when no series has two samples.
func (c *Client) Increase(ctx context.Context, selector string, start, end time.Time) (delta float64, ok bool, err error) {
	series, err := c.Samples(ctx, selector, start.Add(-CounterMargin), end.Add(CounterMargin))
	if err != nil {
		return 0, false, err
	}
	delta, ok = CounterDelta(series, start, end)
	return delta, ok, nil
}

// CounterDelta is how much the counters grew from start to end, summed over the series: each
// end's value is interpolated between the two samples around it. increase() instead
// extrapolates from the samples inside the window, and with a 6 s window and cAdvisor's uneven
// sample times that read 79 % of a 1-cpu cap for a saturated server whose 20 s windows read
// 97 %. The series are Samples' around the window. ok is false when no series has two samples.
func CounterDelta(series []Series, start, end time.Time) (delta float64, ok bool) {
	for _, s := range series {
		pts := resetAdjusted(s.Points)
		if len(pts) < 2 {
			continue
		}
		delta += counterAt(pts, end) - counterAt(pts, start)
		ok = true
	}
	return delta, ok
}

// resetAdjusted returns the points in time order with counter resets (a value below the one
// before) folded in, so the values only grow.
func resetAdjusted(in []Point) []Point {
	pts := append([]Point(nil), in...)
	sort.Slice(pts, func(i, j int) bool { return pts[i].T.Before(pts[j].T) })
	offset, prev := 0.0, 0.0
	for i := range pts {
		raw := pts[i].V
		if i > 0 && raw < prev {
			offset += prev
		}
		prev = raw
		pts[i].V = raw + offset
	}
	return pts
}

// counterAt is the counter's value at t, interpolated between the samples around t, or
// extrapolated along the nearest two samples when t lies outside them.
func counterAt(pts []Point, t time.Time) float64 {
	i := sort.Search(len(pts), func(i int) bool { return !pts[i].T.Before(t) })
	var a, b Point
	switch {
	case i == 0:
		a, b = pts[0], pts[1]
	case i == len(pts):
		a, b = pts[len(pts)-2], pts[len(pts)-1]
	default:
		a, b = pts[i-1], pts[i]
	}
	span := b.T.Sub(a.T).Seconds()
	if span <= 0 {
		return b.V
	}
	v := a.V + (b.V-a.V)*t.Sub(a.T).Seconds()/span
	if v < 0 {
		return 0
	}
	return v
}
