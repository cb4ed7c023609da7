package obsbench

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"
)

// The stack costs the load tool in two ways: the tool's own work for it (serving a scrape,
// k6's output) and the core the stack shares with it. The second shows in the kernel's run-queue
// delay of the tool's threads (schedstat's second field: time spent runnable but not running).
// Unlike throughput and p99, which follow the server on the other core and this VM's moment, the
// delay moves only with what shares the tool's core, so a few pairs of blocks settle it on a
// noisy day as well.

// schedTotals are schedstat's fields for a thread, or summed over threads: time on a CPU, time
// waiting for one (both in ns), and the number of times it ran.
type schedTotals struct {
	CPUNs  int64 `json:"cpu_ns"`
	WaitNs int64 `json:"wait_ns"`
	Slices int64 `json:"slices"`
}

// parseSchedstat reads /proc/<tid>/schedstat: "<on-cpu ns> <waiting ns> <timeslices>".
func parseSchedstat(b []byte) (schedTotals, error) {
	f := strings.Fields(string(b))
	if len(f) != 3 {
		return schedTotals{}, fmt.Errorf("schedstat %q: want three fields", bytes.TrimSpace(b))
	}
	var v [3]int64
	for i, s := range f {
		n, err := strconv.ParseInt(s, 10, 64)
		if err != nil || n < 0 {
			return schedTotals{}, fmt.Errorf("schedstat %q: field %d is not a count", bytes.TrimSpace(b), i+1)
		}
		v[i] = n
	}
	return schedTotals{CPUNs: v[0], WaitNs: v[1], Slices: v[2]}, nil
}

// containerTasks lists the host thread IDs of a container's tasks, from its cgroup (v1 or v2).
func containerTasks(id string) ([]string, bool) {
	for _, p := range []string{
		"/sys/fs/cgroup/cpu,cpuacct/docker/" + id + "/tasks",
		"/sys/fs/cgroup/cpuacct/docker/" + id + "/tasks",
		"/sys/fs/cgroup/cpu/docker/" + id + "/tasks",
		"/sys/fs/cgroup/system.slice/docker-" + id + ".scope/cgroup.threads",
		"/sys/fs/cgroup/docker/" + id + "/cgroup.threads",
	} {
		if b, err := os.ReadFile(p); err == nil {
			return strings.Fields(string(b)), true
		}
	}
	return nil, false
}

// containerSched reads schedstat for each of a container's tasks, by host thread ID. A thread
// that ends between the list and its read is left out.
func containerSched(id string) (map[string]schedTotals, bool) {
	tids, ok := containerTasks(id)
	if !ok || len(tids) == 0 {
		return nil, false
	}
	out := make(map[string]schedTotals, len(tids))
	for _, tid := range tids {
		b, err := os.ReadFile("/proc/" + tid + "/schedstat")
		if err != nil {
			continue
		}
		if t, err := parseSchedstat(b); err == nil {
			out[tid] = t
		}
	}
	return out, len(out) > 0
}

// schedSample is one reading of the tool's threads at a unix time.
type schedSample struct {
	At      float64                `json:"unix"`
	Threads map[string]schedTotals `json:"threads"`
}

// toolWait is what the tool's threads did over a stretch of time, per second of it.
type toolWait struct {
	WaitMsPerS float64 `json:"wait_ms_per_s"` // run-queue delay: runnable, not running
	Cores      float64 `json:"cores"`         // on a CPU
	WaitPerRun float64 `json:"wait_us_per_run"`
}

// sampleDelta is the tool's wait over the samples that fall in [from, to] (unix seconds), from
// the first and the last of them, thread by thread: a thread that started in between counts
// whole, one that ended in between is lost (the container's start and exit run short-lived
// helpers, whose totals would otherwise make the sum fall). It is missing with fewer than two
// samples.
func sampleDelta(samples []schedSample, from, to float64) (toolWait, bool) {
	var first, last *schedSample
	for i := range samples {
		s := &samples[i]
		if s.At < from || s.At > to {
			continue
		}
		if first == nil {
			first = s
		}
		last = s
	}
	if first == nil || last == first || last.At <= first.At {
		return toolWait{}, false
	}
	var d schedTotals
	for tid, b := range last.Threads {
		a, ok := first.Threads[tid]
		if !ok || b.CPUNs < a.CPUNs || b.WaitNs < a.WaitNs || b.Slices < a.Slices { // new, or the ID reused
			a = schedTotals{}
		}
		d.CPUNs, d.WaitNs, d.Slices = d.CPUNs+b.CPUNs-a.CPUNs, d.WaitNs+b.WaitNs-a.WaitNs, d.Slices+b.Slices-a.Slices
	}
	span := last.At - first.At
	w := toolWait{WaitMsPerS: float64(d.WaitNs) / 1e6 / span, Cores: float64(d.CPUNs) / 1e9 / span}
	if d.Slices > 0 {
		w.WaitPerRun = float64(d.WaitNs) / 1e3 / float64(d.Slices)
	}
	return w, true
}

// schedWatch samples a container's threads' schedstat every period, from the moment a container
// of the given name exists until stop.
type schedWatch struct {
	mu      sync.Mutex
	samples []schedSample
	done    chan struct{}
	stopped chan struct{}
}

// watchSched starts sampling the tool container the engine is about to start as name.
func watchSched(name string, period time.Duration) *schedWatch {
	w := &schedWatch{done: make(chan struct{}), stopped: make(chan struct{})}
	go func() {
		defer close(w.stopped)
		tick := time.NewTicker(period)
		defer tick.Stop()
		id := ""
		for {
			select {
			case <-w.done:
				return
			case <-tick.C:
			}
			if id == "" {
				ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
				id = containerID(ctx, name)
				cancel()
				if id == "" {
					continue
				}
			}
			if t, ok := containerSched(id); ok {
				w.mu.Lock()
				w.samples = append(w.samples, schedSample{At: unix(time.Now()), Threads: t})
				w.mu.Unlock()
			}
		}
	}()
	return w
}

// stop ends the sampling and returns the samples taken.
func (w *schedWatch) stop() []schedSample {
	close(w.done)
	<-w.stopped
	w.mu.Lock()
	defer w.mu.Unlock()
	return append([]schedSample(nil), w.samples...)
}

// schedPeriod is how often the tool's schedstat is read: 4 samples a second, so a block's
// counted seconds hold several, at one small read per thread each.
const schedPeriod = 250 * time.Millisecond

// writeSched keeps the schedstat samples in the raw folder, beside the tool's own result.
func writeSched(dir, name string, samples []schedSample) error {
	b, err := json.MarshalIndent(samples, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, name), append(b, '\n'), 0o644)
}

// trialSched runs one tool run (its container named name) while sampling its schedstat, keeps
// the samples as sched-<prefix>.json, and adds the tool's wait over its whole run to the trial.
func trialSched(dir, prefix, name string, run func() (trial, error)) (trial, error) {
	watch := watchSched(name, schedPeriod)
	t, err := run()
	samples := watch.stop()
	if err != nil {
		return t, err
	}
	if err := writeSched(dir, "sched-"+prefix+".json", samples); err != nil {
		return t, err
	}
	if w, ok := sampleDelta(samples, math.Inf(-1), math.Inf(1)); ok {
		t.Wait = &w
	}
	return t, nil
}
