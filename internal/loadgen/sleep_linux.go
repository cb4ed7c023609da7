package loadgen

import (
	"time"

	"golang.org/x/sys/unix"
)

// nanosleep sleeps d in the kernel, which wakes the thread within its timer slack.
func nanosleep(d time.Duration) {
	ts := unix.NsecToTimespec(int64(d))
	for unix.Nanosleep(&ts, &ts) == unix.EINTR {
	}
}

// preciseTimers sets the calling thread's timer slack to 1 ns (the default is 50 µs), so that its
// nanosleeps end on time. The caller must hold the thread (runtime.LockOSThread).
func preciseTimers() { _ = unix.Prctl(unix.PR_SET_TIMERSLACK, 1, 0, 0, 0) }
