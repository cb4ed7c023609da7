//go:build !linux

package netloop

import "time"

// Timer is not available off Linux.
type Timer struct{ FD int }

// NewTimer is not available off Linux.
func NewTimer() (*Timer, error) { return nil, errUnsupported }

// Arm is not available off Linux.
func (t *Timer) Arm(time.Duration) error { return errUnsupported }

// Drain is not available off Linux.
func (t *Timer) Drain() {}

// Close is not available off Linux.
func (t *Timer) Close() error { return errUnsupported }
