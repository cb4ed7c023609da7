//go:build !linux

package loadgen

import "time"

func nanosleep(d time.Duration) { time.Sleep(d) }

func preciseTimers() {}
