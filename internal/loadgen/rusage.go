package loadgen

import "syscall"

// cpuSeconds is this process's user+system CPU time. The generator reports its own CPU so that a
// reader can see how close it came to being the bottleneck.
func cpuSeconds() float64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return tv(ru.Utime) + tv(ru.Stime)
}

func tv(t syscall.Timeval) float64 { return float64(t.Sec) + float64(t.Usec)/1e6 }
