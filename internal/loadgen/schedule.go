package loadgen

import (
	"sync/atomic"
	"time"
)

// Ticket is one request the schedule allows: when it was meant to be sent, and whether it falls
// in the measured window (false during warm-up).
type Ticket struct {
	Intended time.Time
	Measured bool
}

// Schedule hands out tickets to every worker of a run. In the closed model a ticket is due at
// once; in the open model ticket n is due at start + pacer.Due(n), whoever claims it and whenever
// they do. Claiming is one atomic add, so workers never queue behind each other for tickets.
type Schedule struct {
	clock        Clock
	start        time.Time // warm-up starts
	measureStart time.Time // measured window starts (start + warm-up)
	end          time.Time // closed model: no ticket is issued at or after end
	pacer        Pacer     // open model only; includes the warm-up prefix
	next         atomic.Int64
	stopped      atomic.Bool
}

// NewClosedSchedule issues tickets back to back from start until start+warmup+duration.
func NewClosedSchedule(clock Clock, start time.Time, warmup, duration time.Duration) *Schedule {
	return &Schedule{clock: clock, start: start, measureStart: start.Add(warmup), end: start.Add(warmup + duration)}
}

// NewOpenSchedule issues tickets on the pacer's schedule, preceded by a warm-up at the pacer's
// initial rate (so the server is warm at the rate the measurement starts with).
func NewOpenSchedule(clock Clock, start time.Time, warmup time.Duration, p Pacer) *Schedule {
	full := p
	if warmup > 0 {
		full = NewSequence(Constant{PerSec: p.Rate(0), For: warmup}, p)
	}
	return &Schedule{clock: clock, start: start, measureStart: start.Add(warmup), end: start.Add(full.Length()), pacer: full}
}

// Open reports whether the schedule is the open model.
func (s *Schedule) Open() bool { return s.pacer != nil }

// MeasureStart is when the measured window begins.
func (s *Schedule) MeasureStart() time.Time { return s.measureStart }

// End is when the schedule ends: no ticket is intended at or after it.
func (s *Schedule) End() time.Time { return s.end }

// Stop makes every later Claim fail, so the run winds down early (abort, interrupt).
func (s *Schedule) Stop() { s.stopped.Store(true) }

// Claim returns the next ticket, or false when the schedule is over. It never waits: an open
// ticket may be due in the future, and the caller sleeps until its Intended time.
func (s *Schedule) Claim(now time.Time) (Ticket, bool) {
	// Past the end nothing more is sent, even tickets that were due earlier: a generator that
	// fell behind must show up as rate-not-met, not as a run that quietly took longer.
	if s.stopped.Load() || !now.Before(s.end) {
		return Ticket{}, false
	}
	if s.pacer == nil {
		return Ticket{Intended: now, Measured: !now.Before(s.measureStart)}, true
	}
	n := s.next.Add(1) - 1
	due, ok := s.pacer.Due(n)
	if !ok {
		return Ticket{}, false
	}
	t := s.start.Add(due)
	return Ticket{Intended: t, Measured: !t.Before(s.measureStart)}, true
}

// TargetRate is the open model's target rate at t (0 in the closed model).
func (s *Schedule) TargetRate(t time.Time) float64 {
	if s.pacer == nil {
		return 0
	}
	return s.pacer.Rate(t.Sub(s.start))
}

// Issued is how many tickets have been claimed so far in the open model.
func (s *Schedule) Issued() int64 { return s.next.Load() }
