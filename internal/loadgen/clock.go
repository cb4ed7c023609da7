package loadgen

import (
	"context"
	"time"
)

// Clock is the engine's source of time. Tests use a fake one so that pacing is checked without
// sleeping; the real one is the monotonic wall clock.
type Clock interface {
	Now() time.Time
	// SleepUntil returns when t is reached or ctx is done (with ctx's error).
	SleepUntil(ctx context.Context, t time.Time) error
}

// RealClock is the system clock.
type RealClock struct{}

// Now implements Clock.
func (RealClock) Now() time.Time { return time.Now() }

// coarseSleepMargin is how far short of the target a Go timer sleep stops. Go's timers wake
// through the network poller, whose timeout has millisecond resolution: a timer for 300 µs fires
// after about a millisecond (measured on this machine). That error would land in every open-model
// latency, so the last stretch is slept with nanosleep(2), which the kernel ends within
// microseconds (the pacer thread also sets its timer slack to 1 ns).
const coarseSleepMargin = 2 * time.Millisecond

// SleepUntil implements Clock. The final nanosleep cannot be interrupted, but it is at most
// coarseSleepMargin plus a millisecond long.
func (RealClock) SleepUntil(ctx context.Context, t time.Time) error {
	for {
		if err := ctx.Err(); err != nil {
			return err
		}
		d := time.Until(t)
		if d <= 0 {
			return nil
		}
		if d > coarseSleepMargin+time.Millisecond {
			timer := time.NewTimer(d - coarseSleepMargin)
			select {
			case <-timer.C:
			case <-ctx.Done():
				timer.Stop()
				return ctx.Err()
			}
			continue
		}
		nanosleep(d)
	}
}
