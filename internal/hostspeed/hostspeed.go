// Package hostspeed measures how fast the host's cores are right now, with a fixed CPU-bound loop
// pinned to each core. Two results folders made at different times measure the machine as well
// as the code (a VM's neighbours, thermal state, a noisy host); the index taken at the start and
// end of each run is what lets compare tell a change of the code from a change of the machine.
package hostspeed

import (
	"fmt"
	"math"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"
)

// Method says what the index is, for run.json and the reports.
const Method = "fixed integer loop (xorshift-multiply, 2^24 iterations) pinned to each core; index = million iterations per second, median of 3 tries per core, mean over the role's cores"

// Sample is the index of the server's and the load tools' cores at one moment.
type Sample struct {
	At     time.Time `json:"at"`
	Server float64   `json:"server"`
	Client float64   `json:"client"`
	// Noise is the index's own spread at this sample: the largest max/min − 1 of one core's
	// three tries, over every core of both roles. A drift no larger than the noise is not one.
	Noise float64 `json:"noise,omitempty"`
}

// Record is run.json's "host_speed": a sample at the start of the run and one at its end.
type Record struct {
	Method       string  `json:"method"`
	ServerCPUSet string  `json:"server_cpuset"`
	ClientCPUSet string  `json:"client_cpuset"`
	Start        *Sample `json:"start,omitempty"`
	End          *Sample `json:"end,omitempty"`
	Error        string  `json:"error,omitempty"`
}

// Samples lists the samples taken, start first.
func (r *Record) Samples() []Sample {
	var out []Sample
	if r == nil {
		return nil
	}
	for _, s := range []*Sample{r.Start, r.End} {
		if s != nil {
			out = append(out, *s)
		}
	}
	return out
}

// Take measures both roles' cores now.
func Take(serverCPUSet, clientCPUSet string) (Sample, error) {
	s := Sample{At: time.Now().UTC()}
	var err error
	var n1, n2 float64
	if s.Server, n1, err = measure(serverCPUSet); err != nil {
		return s, fmt.Errorf("server cpuset %s: %w", serverCPUSet, err)
	}
	if s.Client, n2, err = measure(clientCPUSet); err != nil {
		return s, fmt.Errorf("client cpuset %s: %w", clientCPUSet, err)
	}
	s.Noise = math.Max(n1, n2)
	return s, nil
}

// Measure runs the loop on each core of cpuset ("0", "0-1", "2,3") and returns the mean over the
// cores of each core's median of three tries, in million iterations per second.
func Measure(cpuset string) (float64, error) {
	v, _, err := measure(cpuset)
	return v, err
}

// measure is Measure with the noise: the largest spread of one core's tries.
func measure(cpuset string) (index, noise float64, err error) {
	cores, err := ParseCPUSet(cpuset)
	if err != nil {
		return 0, 0, err
	}
	sum := 0.0
	for _, c := range cores {
		v, n, err := onCore(c)
		if err != nil {
			return 0, 0, err
		}
		sum, noise = sum+v, math.Max(noise, n)
	}
	return sum / float64(len(cores)), noise, nil
}

const iterations = 1 << 24

// sink keeps the compiler from dropping the loop.
var sink uint64

func onCore(core int) (float64, float64, error) {
	type result struct {
		v, noise float64
		err      error
	}
	ch := make(chan result, 1)
	go func() {
		// A locked thread pinned to the core, so the loop runs there and only there; the
		// thread ends with the goroutine, so the pin does not leak to other goroutines.
		runtime.LockOSThread()
		var set unix.CPUSet
		set.Set(core)
		if err := unix.SchedSetaffinity(0, &set); err != nil {
			ch <- result{err: fmt.Errorf("pin to core %d: %w", core, err)}
			return
		}
		tries := make([]float64, 3)
		for i := range tries {
			start := time.Now()
			sink += loop(iterations)
			tries[i] = iterations / time.Since(start).Seconds() / 1e6
		}
		sort.Float64s(tries)
		ch <- result{v: tries[1], noise: tries[2]/tries[0] - 1}
	}()
	r := <-ch
	return r.v, r.noise, r.err
}

// loop is the fixed work: a dependent chain of xorshift and multiply, which no core can run in
// parallel and no compiler can fold.
func loop(n int) uint64 {
	x := uint64(0x9E3779B97F4A7C15)
	for i := 0; i < n; i++ {
		x ^= x << 13
		x ^= x >> 7
		x ^= x << 17
		x *= 0x2545F4914F6CDD1D
	}
	return x
}

// ParseCPUSet reads a cpuset list: "0", "0-3", "0,2-3".
func ParseCPUSet(s string) ([]int, error) {
	var out []int
	for _, part := range strings.Split(strings.TrimSpace(s), ",") {
		lo, hi, isRange := strings.Cut(part, "-")
		a, err := strconv.Atoi(strings.TrimSpace(lo))
		if err != nil {
			return nil, fmt.Errorf("cpuset %q: %q is not a core number", s, lo)
		}
		b := a
		if isRange {
			if b, err = strconv.Atoi(strings.TrimSpace(hi)); err != nil || b < a {
				return nil, fmt.Errorf("cpuset %q: bad range %q", s, part)
			}
		}
		for c := a; c <= b; c++ {
			out = append(out, c)
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("cpuset %q: no cores", s)
	}
	return out, nil
}

// Noise is the largest own noise of the records' samples (Sample.Noise).
func Noise(recs ...*Record) float64 {
	n := 0.0
	for _, r := range recs {
		for _, s := range r.Samples() {
			n = math.Max(n, s.Noise)
		}
	}
	return n
}

// Drift is how far the host's speed moved across the given records' samples: for each role,
// max/min − 1 over every sample of every record, the larger of the two roles. ok is false when
// fewer than two samples hold a figure, so that nothing can be said.
func Drift(recs ...*Record) (drift float64, ok bool) {
	for _, role := range []func(Sample) float64{func(s Sample) float64 { return s.Server }, func(s Sample) float64 { return s.Client }} {
		lo, hi, n := math.Inf(1), 0.0, 0
		for _, r := range recs {
			for _, s := range r.Samples() {
				if v := role(s); v > 0 {
					lo, hi, n = math.Min(lo, v), math.Max(hi, v), n+1
				}
			}
		}
		if n >= 2 {
			drift, ok = math.Max(drift, hi/lo-1), true
		}
	}
	return drift, ok
}
