package loadgen

import (
	"fmt"
	"math"
	"time"
)

// Pacer is the schedule of an open-model run. Unlike a pacer that answers "how long until the
// next hit" from the current time, it answers "when is hit n due" from the start of the run, so
// the intended time of a request never depends on when a worker got round to asking: a late
// worker gets an intended time in the past, and the lateness shows up in the latency instead of
// disappearing (the coordinated-omission mistake).
type Pacer interface {
	// Due returns the offset from the start of the schedule at which hit n (counting from 0) is
	// due, and false when the schedule has no hit n.
	Due(n int64) (time.Duration, bool)
	// Hits is the number of hits in the whole schedule.
	Hits() int64
	// Rate is the target rate in hits per second at offset t (0 outside the schedule).
	Rate(t time.Duration) float64
	// Length is how long the schedule lasts.
	Length() time.Duration
}

// Constant sends PerSec hits per second for For: hit n is due at n/PerSec, so the hits are
// spread evenly instead of sent in bursts at the top of each second.
type Constant struct {
	PerSec float64
	For    time.Duration
}

// Due implements Pacer.
func (c Constant) Due(n int64) (time.Duration, bool) {
	if n < 0 || n >= c.Hits() {
		return 0, false
	}
	return seconds(float64(n) / c.PerSec), true
}

// Hits implements Pacer: the count of n ≥ 0 with n/PerSec < For, which is ⌈PerSec·For⌉.
func (c Constant) Hits() int64 {
	if c.PerSec <= 0 || c.For <= 0 {
		return 0
	}
	return ceilHits(c.PerSec * c.For.Seconds())
}

// Rate implements Pacer.
func (c Constant) Rate(t time.Duration) float64 {
	if t < 0 || t >= c.For {
		return 0
	}
	return c.PerSec
}

// Length implements Pacer.
func (c Constant) Length() time.Duration { return c.For }

// String describes the pacer for reports.
func (c Constant) String() string { return fmt.Sprintf("%g/s for %s", c.PerSec, c.For) }

// Ramp changes the rate linearly from From to To hits per second over For. The rate at t is
// r(t) = From + (To−From)·t/D, so the hits due by t are N(t) = From·t + (To−From)·t²/(2D), and
// hit n is due at the t where N(t) = n: with a = (To−From)/(2D) that is
// t = 2n / (From + √(From² + 4an)), a form that stays exact when a is 0 or negative.
type Ramp struct {
	From, To float64
	For      time.Duration
}

// Due implements Pacer.
func (r Ramp) Due(n int64) (time.Duration, bool) {
	if n < 0 || n >= r.Hits() {
		return 0, false
	}
	if n == 0 {
		return 0, true
	}
	a := (r.To - r.From) / (2 * r.For.Seconds())
	disc := r.From*r.From + 4*a*float64(n)
	if disc < 0 {
		disc = 0
	}
	return seconds(2 * float64(n) / (r.From + math.Sqrt(disc))), true
}

// Hits implements Pacer: ⌈N(D)⌉ = ⌈(From+To)·D/2⌉.
func (r Ramp) Hits() int64 {
	if r.For <= 0 || r.From < 0 || r.To < 0 {
		return 0
	}
	return ceilHits((r.From + r.To) * r.For.Seconds() / 2)
}

// Rate implements Pacer.
func (r Ramp) Rate(t time.Duration) float64 {
	if t < 0 || t >= r.For {
		return 0
	}
	return r.From + (r.To-r.From)*t.Seconds()/r.For.Seconds()
}

// Length implements Pacer.
func (r Ramp) Length() time.Duration { return r.For }

// String describes the pacer for reports.
func (r Ramp) String() string { return fmt.Sprintf("%g→%g/s over %s", r.From, r.To, r.For) }

// Sequence plays pacers one after the other: steps are a sequence of Constants, and the warm-up
// is a Constant put in front of the measured schedule.
type Sequence struct {
	parts   []Pacer
	offsets []time.Duration // start of each part
	first   []int64         // index of each part's first hit
	hits    int64
	length  time.Duration
}

// NewSequence builds a Sequence of parts.
func NewSequence(parts ...Pacer) *Sequence {
	s := &Sequence{parts: parts}
	for _, p := range parts {
		s.offsets = append(s.offsets, s.length)
		s.first = append(s.first, s.hits)
		s.length += p.Length()
		s.hits += p.Hits()
	}
	return s
}

// Steps is the usual staircase: one Constant per step.
func Steps(steps ...Constant) *Sequence {
	parts := make([]Pacer, len(steps))
	for i, s := range steps {
		parts[i] = s
	}
	return NewSequence(parts...)
}

// Due implements Pacer.
func (s *Sequence) Due(n int64) (time.Duration, bool) {
	if n < 0 || n >= s.hits {
		return 0, false
	}
	// Few parts: a linear scan from the end beats a binary search's bookkeeping.
	for i := len(s.parts) - 1; i >= 0; i-- {
		if n >= s.first[i] && s.parts[i].Hits() > 0 {
			d, ok := s.parts[i].Due(n - s.first[i])
			return s.offsets[i] + d, ok
		}
	}
	return 0, false
}

// Hits implements Pacer.
func (s *Sequence) Hits() int64 { return s.hits }

// Rate implements Pacer.
func (s *Sequence) Rate(t time.Duration) float64 {
	for i, p := range s.parts {
		if t >= s.offsets[i] && t < s.offsets[i]+p.Length() {
			return p.Rate(t - s.offsets[i])
		}
	}
	return 0
}

// Length implements Pacer.
func (s *Sequence) Length() time.Duration { return s.length }

// String describes the pacer for reports.
func (s *Sequence) String() string {
	out := ""
	for i, p := range s.parts {
		if i > 0 {
			out += ", then "
		}
		out += fmt.Sprint(p)
	}
	return out
}

// MeanRate is the average target rate of a pacer over its length.
func MeanRate(p Pacer) float64 {
	if p.Length() <= 0 {
		return 0
	}
	return float64(p.Hits()) / p.Length().Seconds()
}

// ceilHits rounds a hit count up, forgiving the last bits of float error so that 2000/s for 3 s
// is 6000 hits and not 6001.
func ceilHits(x float64) int64 {
	return int64(math.Ceil(x - 1e-9))
}

func seconds(s float64) time.Duration { return time.Duration(s * float64(time.Second)) }
