package loadgen

import (
	"context"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/protobench/protobench/internal/record"
)

// TestSharedStart: given a shared start ahead, the run opens its connections, waits for it and
// only then warms up, so its window begins a warm-up after the instant; given one already past,
// it starts at once and says how late it was (late-start), never shifting its window silently.
func TestSharedStart(t *testing.T) {
	cfg := func() *Config {
		return &Config{Target: Target{Scheme: "churntest", Address: "fake:1", URL: "churntest://fake:1"},
			Connections: 2, Concurrency: 2, Warmup: 100 * time.Millisecond, Duration: 200 * time.Millisecond,
			ConnectTimeout: time.Second, Options: map[string]string{}}
	}

	at := time.Now().Add(300 * time.Millisecond)
	res, err := Run(context.Background(), cfg(), RunOptions{StartAt: at})
	if err != nil {
		t.Fatal(err)
	}
	windowStart := time.Unix(0, int64(res.StartUnix*1e9))
	if early := at.Add(100 * time.Millisecond).Sub(windowStart); early > time.Microsecond {
		t.Errorf("the window began %s before the shared start plus the warm-up", early)
	}
	if late := windowStart.Sub(at.Add(100 * time.Millisecond)); late > 50*time.Millisecond {
		t.Errorf("the window began %s after the shared start plus the warm-up", late)
	}
	if res.StartAt != FormatStartAt(at) || res.StartWaitS <= 0.1 || res.StartWaitS > 0.3 || res.StartLateS != 0 || res.HasFlag(record.FlagLateStart) {
		t.Errorf("start_at %q (want %q), waited %v s (want up to 0.3), late %v s, flags %v", res.StartAt, FormatStartAt(at), res.StartWaitS, res.StartLateS, res.Flags)
	}
	if res.Requests == 0 {
		t.Error("no request after the shared start")
	}

	past := time.Now().Add(-time.Second)
	res, err = Run(context.Background(), cfg(), RunOptions{StartAt: past})
	if err != nil {
		t.Fatal(err)
	}
	if res.StartLateS < 1 || res.StartLateS > 2 || res.StartWaitS != 0 || !res.HasFlag(record.FlagLateStart) {
		t.Errorf("a start a second past: late %v s, waited %v s, flags %v; want about 1 s late, flagged %s", res.StartLateS, res.StartWaitS, res.Flags, record.FlagLateStart)
	}

	// Interrupted while waiting: the run ends at once, as interrupted.
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	began := time.Now()
	if _, err := Run(ctx, cfg(), RunOptions{StartAt: time.Now().Add(time.Minute)}); err != ErrInterrupted {
		t.Errorf("a wait interrupted: %v, want %v", err, ErrInterrupted)
	}
	if d := time.Since(began); d > 5*time.Second {
		t.Errorf("the interrupted wait took %s", d)
	}
}

// TestStartAtFlag: --start-at takes an RFC 3339 instant with its zone, not more than
// MaxStartAhead ahead, and the command passes it to the run.
func TestStartAtFlag(t *testing.T) {
	base := []string{"--target", "churntest://fake:1"}
	at := time.Now().Add(time.Minute).Truncate(time.Millisecond)
	_, f, err := ParseArgs(append(base, "--start-at", FormatStartAt(at)), io.Discard)
	if err != nil || !f.StartAt.Equal(at) {
		t.Errorf("--start-at %s: %v, %v", FormatStartAt(at), f.StartAt, err)
	}
	for _, c := range []struct{ value, want string }{
		{"10:00", "RFC 3339"},
		{"2026-11-28T10:00:00", "RFC 3339"}, // no zone
		{FormatStartAt(time.Now().Add(time.Hour)), "ahead, more than 10m0s"},
	} {
		if _, _, err := ParseArgs(append(base, "--start-at", c.value), io.Discard); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("--start-at %s: %v, want an error saying %q", c.value, err, c.want)
		}
	}
}
