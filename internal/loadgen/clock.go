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

// SleepUntil implements Clock.
func (RealClock) SleepUntil(ctx context.Context, t time.Time) error {
	d := time.Until(t)
	if d <= 0 {
		return ctx.Err()
	}
	timer := time.NewTimer(d)
	defer timer.Stop()
	select {
	case <-timer.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
