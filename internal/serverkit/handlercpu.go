package serverkit

import (
	"fmt"
	"runtime"
	"sync"
	"time"
)

// MaxHandlerCPU bounds --handler-cpu: it injects a known slowdown for calibration (a few
// hundred nanoseconds to a few hundred microseconds), and a millisecond per request already
// makes a 1-core server a 1,000 req/s one.
const MaxHandlerCPU = time.Millisecond

// handlerCPU is the CPU time every request burns on top of its work (--handler-cpu): a known,
// real slowdown that calibration runs inject to measure what a verdict can find. It runs a
// fixed count of integer rounds, the count calibrated once against the thread's own CPU clock,
// so that a request descheduled mid-spin still costs the server that much CPU and no more.
// The spin reads no clock: on a VM each read of the thread's CPU clock is a system call of
// about half a microsecond, and the former spin, which read it twice or more per request, added
// 1.2 µs for a knob of 400 ns (a 15 % slowdown of an 8 µs gRPC call where 5 % was asked).
type handlerCPU time.Duration

// checkHandlerCPU refuses a value outside 0..MaxHandlerCPU, naming the flag.
func checkHandlerCPU(d time.Duration) error {
	if d < 0 || d > MaxHandlerCPU {
		return fmt.Errorf("--handler-cpu %s: want a duration from 0 to %s of CPU per request, such as 2us", d, MaxHandlerCPU)
	}
	return nil
}

// burn spends d of CPU time in rounds of spin.
func (d handlerCPU) burn() {
	if d <= 0 {
		return
	}
	rounds := int64(float64(d) * spinRoundsPerNs())
	x := spinSink
	for i := int64(0); i < rounds; i++ {
		x = spin(x)
	}
	spinSink = x
}

// spinSink keeps the compiler from dropping the spin.
var spinSink uint64 = 88172645463325252

// spin is one round of dependent integer work (a xorshift step): a few cycles that no
// compiler or CPU can overlap with the next round.
func spin(x uint64) uint64 {
	x ^= x << 13
	x ^= x >> 7
	x ^= x << 17
	return x
}

var (
	calibrateOnce sync.Once
	roundsPerNs   float64
)

// spinRoundsPerNs is how many rounds of spin one nanosecond of this thread's CPU holds,
// measured once, on first use, over about 20 ms of CPU on a locked thread: the best of five
// tries, so that a try the kernel interrupted (its interrupt work is charged to the thread)
// does not make every later spin short. Without a thread clock (not Linux) it is measured
// against wall time.
func spinRoundsPerNs() float64 {
	calibrateOnce.Do(func() {
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		const rounds = 1 << 20
		best := 0.0
		for try := 0; try < 5; try++ {
			start, ok := threadCPU()
			wall := time.Now()
			x := spinSink
			for i := 0; i < rounds; i++ {
				x = spin(x)
			}
			spinSink = x
			var took time.Duration
			if end, ok2 := threadCPU(); ok && ok2 {
				took = end - start
			} else {
				took = time.Since(wall)
			}
			if took > 0 {
				best = max(best, float64(rounds)/float64(took))
			}
		}
		if best <= 0 {
			best = 1 // a clock that did not move: a round a nanosecond, the order of one
		}
		roundsPerNs = best
	})
	return roundsPerNs
}
