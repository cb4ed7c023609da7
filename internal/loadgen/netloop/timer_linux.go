package netloop

import (
	"time"

	"golang.org/x/sys/unix"
)

// Timer is a timerfd: a clock that an epoll set can wait on, with nanosecond resolution. The
// open model's loops wait on it for the next request's intended send time, where epoll_wait's
// own timeout counts in milliseconds (and Go's timers wake through that same poll).
type Timer struct {
	FD  int
	buf [8]byte
}

// NewTimer creates a disarmed, non-blocking timer on the monotonic clock.
func NewTimer() (*Timer, error) {
	fd, err := unix.TimerfdCreate(unix.CLOCK_MONOTONIC, unix.TFD_NONBLOCK|unix.TFD_CLOEXEC)
	if err != nil {
		return nil, err
	}
	return &Timer{FD: fd}, nil
}

// Arm makes the timer readable after d (at once for d <= 0), replacing any earlier setting.
func (t *Timer) Arm(d time.Duration) error {
	if d <= 0 {
		d = 1 // a zero it_value would disarm the timer
	}
	spec := unix.ItimerSpec{Value: unix.NsecToTimespec(int64(d))}
	return unix.TimerfdSettime(t.FD, 0, &spec, nil)
}

// Drain reads the expiry count, so the timer stops being readable until armed again.
func (t *Timer) Drain() { _, _ = Read(t.FD, t.buf[:]) }

// Close releases the timer.
func (t *Timer) Close() error { return unix.Close(t.FD) }
