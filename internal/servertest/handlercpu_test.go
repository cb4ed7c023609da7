package servertest_test

import (
	"context"
	"syscall"
	"testing"
	"time"

	"github.com/protobench/protobench/internal/servertest"
)

// processCPU is this process's user and system CPU time: the server and the test's client
// both run in it, so a figure here is a difference between two runs that differ only in the
// server's setting.
func processCPU(t *testing.T) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		t.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// callBlock sends n GetUser calls one at a time and returns the process's CPU time they took.
func callBlock(t *testing.T, cl client, n int) time.Duration {
	ctx := context.Background()
	start := processCPU(t)
	for i := 0; i < n; i++ {
		if _, err := cl.GetUser(ctx, int64(i)); err != nil {
			t.Fatalf("GetUser: %v", err)
		}
	}
	return processCPU(t) - start
}

// TestHandlerCPUAddsItsCost: every Go server started with handler_cpu d costs about d more CPU
// per request than the same server without it. Both run at once and take turns in blocks of
// calls, so that the machine's other load falls on both alike. The bounds come from the knob
// and the server's own measured cost: at least half of d more (the spin is on the thread's CPU
// clock, so it cannot cost less than d unless accounting lies), at most 1.5·d plus the cost
// measured without it (a spin on wall time under preemption would show as more).
func TestHandlerCPUAddsItsCost(t *testing.T) {
	const knob = 500 * time.Microsecond
	const blocks, n = 4, 150
	seen := map[string]bool{}
	for _, c := range suite() {
		if c.server == servertest.PythonGRPC || seen[c.server] {
			continue
		}
		seen[c.server] = true
		t.Run(c.name, func(t *testing.T) {
			plain := c.dial(t, servertest.Start(t, c.server, c.options...))
			defer plain.Close()
			slowed := c.dial(t, servertest.Start(t, c.server, append(append([]servertest.Option{}, c.options...),
				servertest.WithKnob("PROTOBENCH_HANDLER_CPU", knob.String()))...))
			defer slowed.Close()
			callBlock(t, plain, n/5)
			callBlock(t, slowed, n/5)
			var cpuPlain, cpuSlowed time.Duration
			for range blocks {
				cpuPlain += callBlock(t, plain, n)
				cpuSlowed += callBlock(t, slowed, n)
			}
			base, with := cpuPlain/(blocks*n), cpuSlowed/(blocks*n)
			extra := with - base
			t.Logf("%s: CPU per request %v without handler_cpu, %v with %v: %v more", c.server, base, with, knob, extra)
			if extra < knob/2 || extra > knob*3/2+base {
				t.Errorf("handler_cpu %v added %v of CPU per request (from %v to %v); want about %v", knob, extra, base, with, knob)
			}
		})
	}
}
