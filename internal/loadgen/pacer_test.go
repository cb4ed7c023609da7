package loadgen

import (
	"context"
	"math"
	"testing"
	"time"
)

// fakeClock is a clock for one goroutine: sleeping jumps straight to the wake-up time, and a
// worker "takes time" by advancing it.
type fakeClock struct{ now time.Time }

func (c *fakeClock) Now() time.Time { return c.now }

func (c *fakeClock) SleepUntil(ctx context.Context, t time.Time) error {
	if t.After(c.now) {
		c.now = t
	}
	return ctx.Err()
}

func (c *fakeClock) advance(d time.Duration) { c.now = c.now.Add(d) }

func TestPacerDue(t *testing.T) {
	ms := time.Millisecond
	tests := []struct {
		name     string
		pacer    Pacer
		hits     int64
		due      map[int64]time.Duration // n -> expected due offset
		notDue   []int64
		rateAt   map[time.Duration]float64
		tolerate time.Duration
	}{
		{
			name:   "constant spreads hits evenly",
			pacer:  Constant{PerSec: 1000, For: 3 * time.Second},
			hits:   3000,
			due:    map[int64]time.Duration{0: 0, 1: ms, 1500: 1500 * ms, 2999: 2999 * ms},
			notDue: []int64{3000, -1},
			rateAt: map[time.Duration]float64{0: 1000, 2999 * ms: 1000, 3 * time.Second: 0},
		},
		{
			name:   "fractional rate rounds the hit count up",
			pacer:  Constant{PerSec: 2.5, For: time.Second},
			hits:   3, // due at 0, 0.4 s, 0.8 s
			due:    map[int64]time.Duration{2: 800 * ms},
			notDue: []int64{3},
		},
		{
			name:     "ramp up from zero is quadratic",
			pacer:    Ramp{From: 0, To: 1000, For: 10 * time.Second},
			hits:     5000,
			due:      map[int64]time.Duration{0: 0, 1250: 5 * time.Second, 50: time.Second}, // N(t)=50t²
			notDue:   []int64{5000},
			rateAt:   map[time.Duration]float64{5 * time.Second: 500},
			tolerate: time.Microsecond,
		},
		{
			name:     "ramp down",
			pacer:    Ramp{From: 1000, To: 0, For: 2 * time.Second},
			hits:     1000,
			due:      map[int64]time.Duration{750: time.Second}, // N(1)=1000-250=750
			notDue:   []int64{1000},
			rateAt:   map[time.Duration]float64{time.Second: 500},
			tolerate: time.Microsecond,
		},
		{
			name:     "flat ramp equals constant",
			pacer:    Ramp{From: 200, To: 200, For: time.Second},
			hits:     200,
			due:      map[int64]time.Duration{100: 500 * ms},
			tolerate: time.Microsecond,
		},
		{
			name:   "steps run one after the other",
			pacer:  Steps(Constant{PerSec: 100, For: time.Second}, Constant{PerSec: 200, For: time.Second}),
			hits:   300,
			due:    map[int64]time.Duration{99: 990 * ms, 100: time.Second, 150: 1250 * ms, 299: 1995 * ms},
			notDue: []int64{300},
			rateAt: map[time.Duration]float64{500 * ms: 100, 1500 * ms: 200, 2 * time.Second: 0},
		},
		{
			name:   "warm-up prefix then ramp",
			pacer:  NewSequence(Constant{PerSec: 10, For: time.Second}, Ramp{From: 10, To: 30, For: time.Second}),
			hits:   30,
			due:    map[int64]time.Duration{10: time.Second},
			rateAt: map[time.Duration]float64{1500 * ms: 20},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := tc.pacer.Hits(); got != tc.hits {
				t.Fatalf("Hits() = %d, want %d", got, tc.hits)
			}
			for n, want := range tc.due {
				got, ok := tc.pacer.Due(n)
				if !ok {
					t.Fatalf("Due(%d) not ok", n)
				}
				if diff := got - want; diff < -tc.tolerate || diff > tc.tolerate {
					t.Errorf("Due(%d) = %s, want %s", n, got, want)
				}
			}
			for _, n := range tc.notDue {
				if _, ok := tc.pacer.Due(n); ok {
					t.Errorf("Due(%d) ok, want past the schedule", n)
				}
			}
			for at, want := range tc.rateAt {
				if got := tc.pacer.Rate(at); math.Abs(got-want) > 1e-9 {
					t.Errorf("Rate(%s) = %g, want %g", at, got, want)
				}
			}
			// Every hit is due inside the schedule, in order.
			prev := time.Duration(-1)
			for n := int64(0); n < tc.pacer.Hits(); n++ {
				d, ok := tc.pacer.Due(n)
				if !ok || d < prev || d >= tc.pacer.Length() {
					t.Fatalf("Due(%d) = %s, %v: out of order or outside [0, %s)", n, d, ok, tc.pacer.Length())
				}
				prev = d
			}
		})
	}
}

// runPaced drives one worker through the engine's real worker loop on a fake clock. service
// returns how long the request sent at (fake) offset t takes.
func runPaced(t *testing.T, sched func(Clock, time.Time) *Schedule, service func(at time.Duration) time.Duration) (*recorder, *fakeClock, time.Time) {
	t.Helper()
	start := time.Unix(1_700_000_000, 0)
	fc := &fakeClock{now: start}
	s := sched(fc, start)
	e := &engine{cfg: &Config{ConnectTimeout: time.Second}, clock: fc, sched: s, runCtx: context.Background(), aborted: make(chan struct{})}
	rec := newRecorder(s.Open())
	w := &fakeWorker{do: func() { fc.advance(service(fc.now.Sub(start))) }}
	e.runWorker(slot{}, w, rec, nil)
	return rec, fc, start
}

type fakeWorker struct{ do func() }

func (w *fakeWorker) Do(context.Context) error { w.do(); return nil }
func (w *fakeWorker) Close() error             { return nil }

func TestPacingOnFakeClock(t *testing.T) {
	const fast = 100 * time.Microsecond
	tests := []struct {
		name         string
		sched        func(Clock, time.Time) *Schedule
		service      func(at time.Duration) time.Duration
		wantRequests int64
		wantWarmup   bool
		check        func(t *testing.T, rec *recorder)
	}{
		{
			name: "open model sends every hit on time when the server is fast",
			sched: func(c Clock, s time.Time) *Schedule {
				return NewOpenSchedule(c, s, 0, Constant{PerSec: 1000, For: time.Second})
			},
			service:      func(time.Duration) time.Duration { return fast },
			wantRequests: 1000,
			check: func(t *testing.T, rec *recorder) {
				if lag := rec.lag.Max(); lag != 0 {
					t.Errorf("scheduler lag max = %d us, want 0", lag)
				}
			},
		},
		{
			name: "a stall is in the corrected latency, not in the service time",
			sched: func(c Clock, s time.Time) *Schedule {
				return NewOpenSchedule(c, s, 0, Constant{PerSec: 1000, For: time.Second})
			},
			// The request sent at 0.5 s takes 200 ms: the 200 hits due meanwhile queue.
			service: func(at time.Duration) time.Duration {
				if at == 500*time.Millisecond {
					return 200 * time.Millisecond
				}
				return fast
			},
			wantRequests: 1000, // the worker catches up after the stall
			check: func(t *testing.T, rec *recorder) {
				if p99 := rec.latency.ValueAtPercentile(99); p99 < 150_000 {
					t.Errorf("corrected p99 = %d us, want the stall (>= 150 ms)", p99)
				}
				if p99 := rec.service.ValueAtPercentile(99); p99 > 1000 {
					t.Errorf("service p99 = %d us, want the fast service time", p99)
				}
				if lag := rec.lag.Max(); lag < 190_000 {
					t.Errorf("scheduler lag max = %d us, want about the 200 ms stall", lag)
				}
			},
		},
		{
			name: "a worker that falls behind is not let off: late hits past the end are not sent",
			sched: func(c Clock, s time.Time) *Schedule {
				return NewOpenSchedule(c, s, 0, Constant{PerSec: 1000, For: time.Second})
			},
			service:      func(time.Duration) time.Duration { return 2 * time.Millisecond }, // half the rate
			wantRequests: 500,
		},
		{
			name: "steps change the rate",
			sched: func(c Clock, s time.Time) *Schedule {
				return NewOpenSchedule(c, s, 0, Steps(Constant{PerSec: 100, For: time.Second}, Constant{PerSec: 400, For: time.Second}))
			},
			service:      func(time.Duration) time.Duration { return fast },
			wantRequests: 500,
		},
		{
			name: "warm-up hits are not recorded",
			sched: func(c Clock, s time.Time) *Schedule {
				return NewOpenSchedule(c, s, 500*time.Millisecond, Constant{PerSec: 100, For: time.Second})
			},
			service:      func(time.Duration) time.Duration { return fast },
			wantRequests: 100,
			wantWarmup:   true,
		},
		{
			name: "closed model runs back to back until the end",
			sched: func(c Clock, s time.Time) *Schedule {
				return NewClosedSchedule(c, s, 100*time.Millisecond, time.Second)
			},
			service:      func(time.Duration) time.Duration { return time.Millisecond },
			wantRequests: 1000,
			wantWarmup:   true,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			rec, _, _ := runPaced(t, tc.sched, tc.service)
			if rec.requests != tc.wantRequests {
				t.Errorf("measured requests = %d, want %d", rec.requests, tc.wantRequests)
			}
			if got := rec.latency.TotalCount(); got != tc.wantRequests {
				t.Errorf("latency histogram count = %d, want %d", got, tc.wantRequests)
			}
			total := rec.liveOK
			if tc.wantWarmup && total <= rec.requests {
				t.Errorf("all %d requests were measured, want warm-up ones excluded", total)
			}
			if tc.check != nil {
				tc.check(t, rec)
			}
		})
	}
}

func TestScheduleStop(t *testing.T) {
	start := time.Unix(1_700_000_000, 0)
	fc := &fakeClock{now: start}
	s := NewOpenSchedule(fc, start, 0, Constant{PerSec: 10, For: time.Second})
	if _, ok := s.Claim(start); !ok {
		t.Fatal("first claim failed")
	}
	s.Stop()
	if _, ok := s.Claim(start); ok {
		t.Fatal("claim after Stop succeeded")
	}
}

func TestPlannedHits(t *testing.T) {
	p := Constant{PerSec: 1000, For: 2 * time.Second}
	tests := []struct {
		name string
		d    time.Duration
		want int64
	}{
		{"whole schedule", 2 * time.Second, 2000},
		{"half", time.Second, 1000},
		{"nothing", 0, 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := plannedHits(p, tc.d); got != tc.want {
				t.Errorf("plannedHits(%s) = %d, want %d", tc.d, got, tc.want)
			}
		})
	}
}

func TestDispatchSendsEveryTicketOnTime(t *testing.T) {
	start := time.Unix(1_700_000_000, 0)
	fc := &fakeClock{now: start}
	s := NewOpenSchedule(fc, start, 200*time.Millisecond, Ramp{From: 100, To: 300, For: time.Second})
	e := &engine{clock: fc, sched: s, runCtx: context.Background()}
	out := make(chan Ticket)
	go e.dispatch(out)
	var got []Ticket
	for tk := range out {
		got = append(got, tk)
	}
	// 20 warm-up hits at 100/s, then the ramp's 200.
	if len(got) != 220 {
		t.Fatalf("dispatched %d tickets, want 220", len(got))
	}
	measured := 0
	for i, tk := range got {
		if i > 0 && tk.Intended.Before(got[i-1].Intended) {
			t.Fatalf("ticket %d intended before ticket %d", i, i-1)
		}
		if tk.Measured {
			measured++
		}
	}
	if measured != 200 {
		t.Errorf("%d measured tickets, want 200", measured)
	}
}
