package runner

import (
	"context"
	"io"
	"testing"
	"time"
)

// hangingDown is a compose whose `down` never returns before its deadline (a daemon that stopped
// answering to compose), while removal by label still works.
type hangingDown struct{ forcedWithTime time.Duration }

func (h *hangingDown) Down(ctx context.Context) error {
	<-ctx.Done()
	return ctx.Err()
}

func (h *hangingDown) ForceRemove(ctx context.Context) error {
	if dl, ok := ctx.Deadline(); ok {
		h.forcedWithTime = time.Until(dl)
	}
	return ctx.Err()
}

func (h *hangingDown) ProjectContainers(context.Context) ([]string, error) { return nil, nil }

// TestTeardownKeepsTimeForTheForcedRemoval checks that a graceful down that runs out of time
// leaves the forced removal its reserve instead of an expired context.
func TestTeardownKeepsTimeForTheForcedRemoval(t *testing.T) {
	h := &hangingDown{}
	td := newTeardown(h, "pb", "docker", io.Discard)
	// Seconds, not milliseconds: a loaded CI machine under -race can pause a goroutine for a
	// few hundred milliseconds, which a 300 ms reserve would not survive.
	td.budget, td.reserve = 4*time.Second, 2*time.Second
	td.arm()
	if !td.run(context.Background()) {
		t.Fatal("teardown gave up although the forced removal had time left")
	}
	if h.forcedWithTime < time.Second {
		t.Fatalf("forced removal got %s of its %s reserve", h.forcedWithTime, td.reserve)
	}
}
