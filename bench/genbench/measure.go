package genbench

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/protobench/protobench/internal/record"
)

// measurement is one generator's measured run.
type measurement struct {
	protocol     string
	tool         string
	rps          float64
	serverCPU    float64 // % of one core
	clientCPU    float64 // the generator's CPU, % of one core
	serverUS     float64 // server CPU per request, µs
	clientUS     float64 // generator CPU per request, µs
	serverOther  float64 // % of the server's core used by other processes: a busy machine
	clientOther  float64 // the same on the generator's core, beside the generator
	p50ms, p99ms float64
	errors       int64
	tls          string // on a TLS row: what the server negotiated with the generator (negotiated)
	err          error
	repeats      int
}

// measure runs one generator against a fresh server: a warm-up run, then the measured run with
// the server's CPU sampled over its middle.
func (b *bench) measure(ctx context.Context, protocol, gen string) measurement {
	m := measurement{protocol: protocol, tool: gen}
	srv, err := b.startServer(ctx, protocol)
	if err != nil {
		m.err = err
		return m
	}
	defer srv.stop()
	fmt.Fprintf(b.stderr, "running %s against the %s server ...\n", gen, protocol)
	if b.o.warmup > 0 {
		if _, err := b.runBounded(ctx, protocol, gen, srv, b.o.warmup, "warmup", nil); err != nil {
			m.err = fmt.Errorf("warm-up: %w", err)
			return m
		}
	}
	type cpuSample struct {
		server, generator, serverCore, clientCore float64
		at                                        time.Time
	}
	pids := make(chan int, 1)
	sample := func(pid int) cpuSample {
		s, _ := cpuSeconds(srv.cmd.Process.Pid)
		g, _ := cpuSeconds(pid)
		return cpuSample{server: s, generator: g, serverCore: coreBusySeconds(b.o.serverCore), clientCore: coreBusySeconds(b.o.clientCore), at: time.Now()}
	}
	samples := make(chan cpuSample, 2)
	go func() {
		pid := <-pids
		// Skip the first second (start-up: k6 compiles its script, connections open) and the
		// last half second (wind-down).
		time.Sleep(time.Second)
		samples <- sample(pid)
		time.Sleep(b.o.duration - 1500*time.Millisecond)
		samples <- sample(pid)
	}()
	rec, err := b.runBounded(ctx, protocol, gen, srv, b.o.duration, "run", func(pid int) { pids <- pid })
	if err != nil && len(pids) == 0 {
		pids <- 0 // the generator never started; let the sampler finish
	}
	s0, s1 := <-samples, <-samples
	if err != nil {
		m.err = err
		return m
	}
	m.rps, m.p50ms, m.p99ms, m.errors = rec.ThroughputRPS, rec.LatencyMs.P50, rec.LatencyMs.P99, rec.Errors
	if spec := protocolSpecs[protocol]; spec.tls {
		// The server's own count of what it negotiated, warm-up and run together: a fresh server
		// has met this generator only.
		hs, err := readHandshakes(ctx, srv.metrics)
		if err == nil {
			m.tls, err = negotiated(hs, spec.alpn())
		}
		if err != nil {
			m.err = fmt.Errorf("TLS: %w", err)
			return m
		}
	}
	if span := s1.at.Sub(s0.at).Seconds(); span > 0 {
		m.serverCPU = 100 * (s1.server - s0.server) / span
		m.clientCPU = 100 * (s1.generator - s0.generator) / span
		m.serverOther = max(0, 100*(s1.serverCore-s0.serverCore)/span-m.serverCPU)
		m.clientOther = max(0, 100*(s1.clientCore-s0.clientCore)/span-m.clientCPU)
		if m.rps > 0 {
			// CPU per request is what decides who saturates first on equal cores, and
			// competition for the cores changes it far less than it changes throughput.
			m.serverUS = m.serverCPU / 100 * 1e6 / m.rps
			m.clientUS = m.clientCPU / 100 * 1e6 / m.rps
		}
	}
	return m
}

// runBounded is runGenerator with a deadline: a generator still running runOverrun(d) after its
// run should have ended is killed, and its run fails, instead of holding up every run after it.
// h2load 1.52 once kept a 1 s HTTPS/1.1 warm-up going for 18 minutes (docs/generator.md).
func (b *bench) runBounded(ctx context.Context, protocol, gen string, srv *server, d time.Duration, phase string, onStart func(pid int)) (record.Record, error) {
	limit := d + runOverrun(d)
	ctx, cancel := context.WithTimeout(ctx, limit)
	defer cancel()
	rec, err := b.runGenerator(ctx, protocol, gen, srv, d, phase, onStart)
	if err != nil && errors.Is(ctx.Err(), context.DeadlineExceeded) {
		err = fmt.Errorf("killed after %s, for a %s run: %w", limit, d, err)
	}
	return rec, err
}

// runOverrun is how long a generator may take beyond its run's duration: start-up (k6 compiles
// its script), connecting, and writing its results.
func runOverrun(d time.Duration) time.Duration { return max(15*time.Second, d) }

// cpuSeconds is a process's user+system CPU time from /proc/<pid>/stat.
func cpuSeconds(pid int) (float64, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, err
	}
	// The command name (field 2) may hold spaces; the fields after its ")" are fixed.
	s := string(b)
	f := strings.Fields(s[strings.LastIndexByte(s, ')')+2:])
	if len(f) < 13 {
		return 0, fmt.Errorf("short /proc/%d/stat", pid)
	}
	utime, _ := strconv.ParseFloat(f[11], 64)
	stime, _ := strconv.ParseFloat(f[12], 64)
	return (utime + stime) / clockTicks, nil
}

// clockTicks is USER_HZ, 100 on every Linux architecture Go supports.
const clockTicks = 100

// coreBusySeconds is how long a CPU has been busy (not idle, not waiting for I/O), from
// /proc/stat.
func coreBusySeconds(cpu int) float64 {
	b, err := os.ReadFile("/proc/stat")
	if err != nil {
		return 0
	}
	prefix := "cpu" + strconv.Itoa(cpu) + " "
	for _, line := range strings.Split(string(b), "\n") {
		if !strings.HasPrefix(line, prefix) {
			continue
		}
		var busy float64
		for i, f := range strings.Fields(line)[1:] {
			v, _ := strconv.ParseFloat(f, 64)
			if i != 3 && i != 4 && i < 8 { // skip idle and iowait; guest time is counted in user
				busy += v
			}
		}
		return busy / clockTicks
	}
	return 0
}
