package loadgen

import (
	"context"
	"fmt"
	"time"

	"github.com/protobench/protobench/internal/record"
)

// The shared start (--start-at). When several generators share one step (tool.Split: one per
// client node of a swarm), each is a task of its own, and the tasks start seconds apart; each
// generator then measured its own window, and the parts' windows did not coincide. So the engine
// gives every part the same instant: each generator opens its connections, then waits until
// that instant before its warm-up, so the parts warm up and measure together (their windows
// differ by the nodes' clock skew and the wake-up only). A generator that is ready only after
// the instant has passed starts at once and says so, in its result (start_late_s) and with the
// late-start flag: it never shifts its window silently.

// startAtUsage is --start-at's help.
const startAtUsage = "start the warm-up at this instant (RFC 3339 with a zone, e.g. 2026-11-28T10:00:00.5Z), once the connections are open: " +
	"generators sharing a step are given the same one; one ready only after it starts at once, with start_late_s and the late-start flag"

// MaxStartAhead is how far ahead --start-at may lie: a mistaken date must not leave the
// generator waiting for hours.
const MaxStartAhead = 10 * time.Minute

// FormatStartAt is an instant as --start-at takes it: RFC 3339 in UTC, to the nanosecond.
func FormatStartAt(t time.Time) string { return t.UTC().Format(time.RFC3339Nano) }

// setStartAt parses --start-at into f.StartAt.
func (f *Flags) setStartAt(s string) error {
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		return fmt.Errorf("want an RFC 3339 instant with its zone, e.g. 2026-11-28T10:00:00.5Z")
	}
	if ahead := time.Until(t); ahead > MaxStartAhead {
		return fmt.Errorf("%s is %s ahead, more than %s", s, ahead.Round(time.Second), MaxStartAhead)
	}
	f.StartAt = t
	return nil
}

// sharedStart is what the wait for RunOptions.StartAt found: how long the generator, its
// connections open, waited for it, or how late it was.
type sharedStart struct {
	at         time.Time
	wait, late time.Duration
}

// waitForStart waits until RunOptions.StartAt, when one is set, and records how long it waited
// or how late the generator was. It returns ErrInterrupted when ctx ends first.
func (e *engine) waitForStart(ctx context.Context) error {
	at := e.opts.StartAt
	if at.IsZero() {
		return nil
	}
	e.shared.at = at
	now := e.clock.Now()
	if now.After(at) {
		e.shared.late = now.Sub(at)
		return nil
	}
	e.shared.wait = at.Sub(now)
	if err := e.clock.SleepUntil(ctx, at); err != nil {
		return ErrInterrupted
	}
	return nil
}

// note puts the shared start into the result: the instant, the wait or the lateness, and the
// late-start flag for a generator that was late.
func (s sharedStart) note(r *Result) {
	if s.at.IsZero() {
		return
	}
	r.StartAt = FormatStartAt(s.at)
	r.StartWaitS = s.wait.Round(time.Microsecond).Seconds()
	r.StartLateS = s.late.Round(time.Microsecond).Seconds()
	if s.late > 0 {
		r.Flags = append(r.Flags, record.FlagLateStart)
	}
}
