// Package measure owns a run's measured window: the waits around the tool (until cAdvisor sees
// the fresh server, until Prometheus holds the samples that cover the window's end), the window
// itself, the server's and the tool's usage read from Prometheus, how the host's cores spent the
// window, and the client-bound rule that decides where the observability stack sits while the
// tool runs.
package measure

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"time"

	"github.com/protobench/protobench/internal/prom"
	"github.com/protobench/protobench/internal/record"
	"github.com/protobench/protobench/internal/targets"
)

// Meter reads what Prometheus holds of a run's containers and of the host's cores.
type Meter interface {
	// WaitSeen waits until the container's CPU series is in Prometheus, so the measured window
	// is covered from its first second, and, for one of our servers (which all serve their own
	// metrics), until Prometheus scrapes the server itself.
	WaitSeen(ctx context.Context, containerID, service string, timeout time.Duration) error
	// WaitCovered waits until the service's samples up to end are stored.
	WaitCovered(ctx context.Context, service string, end time.Time, timeout time.Duration) error
	// Usage reads what cAdvisor saw of a run's service over a window.
	Usage(ctx context.Context, service string, start, end time.Time) (Usage, error)
	// StackUsage reads an observability service, which carries no run's label.
	StackUsage(ctx context.Context, service string, start, end time.Time) (Usage, error)
	// Cores reads how host CPUs spent a window.
	Cores(ctx context.Context, cpuset string, start, end time.Time) (*record.CoreTime, error)
	// Busy and ServicesCPU tell the CPU that processes spent on host CPUs, and our containers'
	// CPU, so that the rest is what other processes used.
	Busy(ctx context.Context, cpuset string, start, end time.Time) (float64, error)
	ServicesCPU(ctx context.Context, services []string, start, end time.Time) (float64, error)
	// TLS reads a TLS server's handshake counters.
	TLS(ctx context.Context, target string, start, end time.Time) (*record.TLSState, error)
	// Encodings reads one of our servers' requests and replies by content encoding.
	Encodings(ctx context.Context, service string, start, end time.Time) (map[string]map[string]float64, error)
	// Frequency reads the clock of host CPUs over a window (measure/clock.go).
	Frequency(ctx context.Context, cpuset string, start, end time.Time) (*record.Frequency, error)
	// Network reads the bytes a run's service received and sent at its network interfaces;
	// ok is false when there is no such series.
	Network(ctx context.Context, service string, start, end time.Time) (rx, tx float64, ok bool, err error)
}

// Prom is the Meter backed by Prometheus, cAdvisor and node-exporter, reading one compose
// project only.
type Prom struct {
	c       *prom.Client
	project string
	runID   string
}

// NewProm reads the containers of project that carry runID's label from the Prometheus of c.
func NewProm(c *prom.Client, project, runID string) Prom {
	return Prom{c: c, project: project, runID: runID}
}

func (m Prom) WaitSeen(ctx context.Context, containerID, service string, timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	expr := fmt.Sprintf(`count(container_cpu_usage_seconds_total{id=~".*%s.*"})`, containerID)
	if err := m.c.WaitUntil(ctx, expr, 250*time.Millisecond, func(v float64) bool { return v > 0 }); err != nil {
		return fmt.Errorf("cAdvisor did not report container %.12s within %s", containerID, timeout)
	}
	if _, ours := targets.Lookup(service); !ours {
		return nil // a custom target may serve no metrics of its own
	}
	// A swarm's Prometheus finds a new server task by service discovery every few seconds; a
	// short run on a busy host could end before its first scrape, and the record would then
	// lack the server's own figures (GOMAXPROCS, TLS handshakes). The scrape must be of this
	// container's process: the service's previous task stays up in Prometheus until its series
	// go stale, and a wait on up alone once passed on it (TestSwarmEndToEnd then read no TLS
	// handshakes from a TLS server).
	expr = fmt.Sprintf(`count(up{%s} == 1)`, serverSelector(service))
	fresh := func(v float64) bool { return v > 0 }
	if since, ok := m.containerStart(ctx, containerID); ok {
		expr = fmt.Sprintf(`max(process_start_time_seconds{%s})`, serverSelector(service))
		fresh = func(v float64) bool { return v >= since-processStartSlack.Seconds() }
	}
	if err := m.c.WaitUntil(ctx, expr, 250*time.Millisecond, fresh); err != nil {
		return fmt.Errorf("Prometheus did not scrape %s's own metrics within %s: its GOMAXPROCS and TLS figures may be missing", service, timeout)
	}
	return nil
}

// processStartSlack is how much earlier than its container a server's process may say it
// started: process_start_time_seconds counts from the boot time, which /proc/stat gives in
// whole seconds.
const processStartSlack = 1500 * time.Millisecond

// containerStart is when cAdvisor says the container started, in Unix seconds on its node's
// clock, which is also the clock of the server's own process_start_time_seconds.
func (m Prom) containerStart(ctx context.Context, containerID string) (float64, bool) {
	s, err := m.c.Query(ctx, fmt.Sprintf(`max(container_start_time_seconds{id=~".*%s.*"})`, containerID), time.Now())
	if err != nil || len(s) == 0 || s[0].Value <= 0 {
		return 0, false
	}
	return s[0].Value, true
}

// serverSelector picks a server's own series: the servers job labels them with the service's
// name as target, under compose (from the address) and on a swarm (from the task's labels).
func serverSelector(service string) string {
	return fmt.Sprintf(`job="servers",target=%q`, service)
}

// WaitCovered waits until cAdvisor's newest CPU sample of the service, as stored in Prometheus,
// is at or after end: then a query over a window ending at end reads complete data.
func (m Prom) WaitCovered(ctx context.Context, service string, end time.Time, timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	expr := fmt.Sprintf(`max(timestamp(container_cpu_usage_seconds_total{container_label_com_docker_compose_project=%q,container_label_com_docker_compose_service=%q}))`, m.project, service)
	want := float64(end.UnixNano()) / 1e9
	if err := m.c.WaitUntil(ctx, expr, 100*time.Millisecond, func(v float64) bool { return v >= want }); err != nil {
		if ctx.Err() != nil && errors.Is(ctx.Err(), context.Canceled) {
			return ctx.Err()
		}
		return fmt.Errorf("Prometheus held no sample of %s after the window's end within %s; its CPU figures may miss the last second", service, timeout)
	}
	return nil
}

func (m Prom) Usage(ctx context.Context, service string, start, end time.Time) (Usage, error) {
	return measureContainer(ctx, m.c, m.project, m.runID, service, start, end)
}

// StackUsage reads an observability service's usage over [start, end]: it runs throughout, so it
// carries no run's label.
func (m Prom) StackUsage(ctx context.Context, service string, start, end time.Time) (Usage, error) {
	return measureContainer(ctx, m.c, m.project, "", service, start, end)
}

// Cores reads how the host CPUs of cpuset spent [start, end], from node-exporter.
func (m Prom) Cores(ctx context.Context, cpuset string, start, end time.Time) (*record.CoreTime, error) {
	return measureCores(ctx, m.c, cpuset, start, end)
}

// Busy reads how many CPU seconds processes spent on the host CPUs of cpuset over [start, end].
func (m Prom) Busy(ctx context.Context, cpuset string, start, end time.Time) (float64, error) {
	return measureBusy(ctx, m.c, cpuset, start, end)
}

// ServicesCPU reads the CPU seconds of the project's containers of services over [start, end].
func (m Prom) ServicesCPU(ctx context.Context, services []string, start, end time.Time) (float64, error) {
	return measureServicesCPU(ctx, m.c, m.project, services, start, end)
}

// TLS reads the server's handshake counters from Prometheus (the servers job scrapes
// target:metrics-port): the negotiated state with the most handshakes, the handshake rate over
// the window, and the sampled CPU per handshake.
func (m Prom) TLS(ctx context.Context, target string, start, end time.Time) (*record.TLSState, error) {
	// By target, not instance: a swarm's instance is the task's address.
	inst := serverSelector(target)
	sum := func(expr string, at time.Time) (float64, error) {
		s, err := m.c.Query(ctx, expr, at)
		if err != nil || len(s) == 0 {
			return 0, err
		}
		return s[0].Value, nil
	}
	at := end.Add(prom.CounterMargin)
	states, err := m.c.Query(ctx, fmt.Sprintf(`sum by (version, cipher, curve, alpn) (protobench_tls_handshakes_total{%s})`, inst), at)
	if err != nil {
		return nil, err
	}
	if len(states) == 0 {
		return nil, fmt.Errorf("%s exposed no protobench_tls_handshakes_total (its TLS library does not count handshakes)", target)
	}
	sort.Slice(states, func(i, j int) bool { return states[i].Value > states[j].Value })
	st := &record.TLSState{Version: states[0].Labels["version"], Cipher: states[0].Labels["cipher"],
		Curve: states[0].Labels["curve"], ALPN: states[0].Labels["alpn"]}
	for _, s := range states {
		st.Handshakes += s.Value
	}
	st.Resumed, _ = sum(fmt.Sprintf(`sum(protobench_tls_handshakes_total{%s,resumed="true"})`, inst), at)
	st.Failures, _ = sum(fmt.Sprintf(`sum(protobench_tls_handshake_failures_total{%s})`, inst), at)
	// The rate over the window, with the counter interpolated at its ends from the samples
	// around them: an instant query at start returns the last sample before it, up to a scrape
	// earlier, and so counted up to a second of warm-up in a 3 s churning window (25-30 % too
	// many handshakes per second, 2026-11-28).
	if w := end.Sub(start).Seconds(); w > 0 {
		if d, ok, err := m.c.Increase(ctx, fmt.Sprintf(`protobench_tls_handshakes_total{%s}`, inst), start, end); err == nil && ok {
			st.HandshakesPerSec = d / w
		}
	}
	for _, res := range []struct {
		label string
		dst   *float64
	}{{"false", &st.CPUUsFull}, {"true", &st.CPUUsResumed}} {
		cpu, _ := sum(fmt.Sprintf(`sum(protobench_tls_handshake_cpu_seconds_total{%s,resumed=%q})`, inst, res.label), at)
		n, _ := sum(fmt.Sprintf(`sum(protobench_tls_handshake_cpu_samples_total{%s,resumed=%q})`, inst, res.label), at)
		if n > 0 {
			*res.dst = cpu / n * 1e6
		}
	}
	return st, nil
}

// Network reads the service's network bytes over [start, end] from cAdvisor.
func (m Prom) Network(ctx context.Context, service string, start, end time.Time) (float64, float64, bool, error) {
	return measureNetwork(ctx, m.c, m.project, m.runID, service, start, end)
}

// None measures nothing: a dry run has no Prometheus. Its waits return at once, its readings
// are empty, and it knows neither the cores nor the TLS state.
type None struct{}

func (None) WaitSeen(context.Context, string, string, time.Duration) error { return nil }
func (None) WaitCovered(context.Context, string, time.Time, time.Duration) error {
	return nil
}
func (None) Usage(context.Context, string, time.Time, time.Time) (Usage, error) {
	return Usage{}, nil
}
func (None) StackUsage(context.Context, string, time.Time, time.Time) (Usage, error) {
	return Usage{}, nil
}
func (None) Cores(context.Context, string, time.Time, time.Time) (*record.CoreTime, error) {
	return nil, errors.New("a dry run reads no core time")
}
func (None) Busy(context.Context, string, time.Time, time.Time) (float64, error) {
	return 0, errors.New("a dry run reads no core time")
}
func (None) ServicesCPU(context.Context, []string, time.Time, time.Time) (float64, error) {
	return 0, errors.New("a dry run reads no container CPU")
}
func (None) TLS(context.Context, string, time.Time, time.Time) (*record.TLSState, error) {
	return nil, nil
}
func (None) Encodings(context.Context, string, time.Time, time.Time) (map[string]map[string]float64, error) {
	return nil, nil
}

func (None) Frequency(context.Context, string, time.Time, time.Time) (*record.Frequency, error) {
	return nil, errors.New("a dry run reads no clock")
}

// Network reads nothing, and has nothing missing to warn about.
func (None) Network(context.Context, string, time.Time, time.Time) (float64, float64, bool, error) {
	return 0, 0, true, nil
}
