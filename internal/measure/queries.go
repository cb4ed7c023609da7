package measure

import (
	"context"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/protobench/protobench/internal/prom"
	"github.com/protobench/protobench/internal/record"
	"github.com/protobench/protobench/internal/scenario"
)

// Usage is what cAdvisor saw of one compose service over a step's measured window.
type Usage struct {
	CPUSeconds       float64
	MemMaxBytes      float64
	ThrottledSeconds float64
	Samples          float64 // how many CPU samples the window held: 0 means cAdvisor saw nothing
	GOMAXPROCS       int     // from the server's own metrics; 0 when it exports none
}

// usageQueries are the PromQL expressions for one service of our compose project over a window
// of seconds. Matching on the compose labels (not the container name) works for Compose v1 and v2
// alike; the project label keeps another project's container of the same service name (a `rest`
// of someone else's) out of the sums, and summing covers the rare case of two containers of a
// service overlapping the window.
func usageQueries(project, runID, service string, window time.Duration) map[string]string {
	sel := fmt.Sprintf(`{container_label_com_docker_compose_project=%q,container_label_com_docker_compose_service=%q`, project, service)
	if runID != "" {
		// The step's containers carry the run's label (the runner's stepRunner.run): a container of an
		// earlier run of this same project never counts either.
		sel += fmt.Sprintf(`,container_label_protobench_run_id=%q`, runID)
	}
	sel += "}"
	w := fmt.Sprintf("[%dms]", window.Milliseconds())
	return map[string]string{
		"cpu":       "container_cpu_usage_seconds_total" + sel,
		"throttled": "container_cpu_cfs_throttled_seconds_total" + sel,
		"mem":       "max(max_over_time(container_memory_working_set_bytes" + sel + w + "))",
		"samples":   "sum(count_over_time(container_cpu_usage_seconds_total" + sel + w + "))",
	}
}

// counterQueries are the usage queries read as raw counter samples (prom.Client.Increase) rather than
// with increase().
var counterQueries = map[string]bool{"cpu": true, "throttled": true}

// minWindow keeps increase() meaningful: with a 1 s scrape it needs a few samples in range.
// Windows shorter than this (only the smoke scenario's) also count some warm-up CPU.
const minWindow = 4 * time.Second

// gomaxprocsQuery reads the GOMAXPROCS a Go server's runtime reported (client_golang exports
// it) over the window; Prometheus labels each server's series with target = its service.
func gomaxprocsQuery(service string, window time.Duration) string {
	return fmt.Sprintf(`max(max_over_time(go_sched_gomaxprocs_threads{job="servers",target=%q}[%dms]))`, service, window.Milliseconds())
}

// measureContainer reads a service's usage over [start, end] from Prometheus.
func measureContainer(ctx context.Context, p *prom.Client, project, runID, service string, start, end time.Time) (Usage, error) {
	var u Usage
	window := end.Sub(start)
	if window < minWindow {
		window = minWindow
	}
	q := usageQueries(project, runID, service, window)
	targets := map[string]*float64{"cpu": &u.CPUSeconds, "mem": &u.MemMaxBytes, "throttled": &u.ThrottledSeconds, "samples": &u.Samples}
	for key, dst := range targets {
		if counterQueries[key] {
			v, _, err := p.Increase(ctx, q[key], start, end)
			if err != nil {
				return u, err
			}
			*dst = v
			continue
		}
		v, _, err := p.Scalar(ctx, q[key], end)
		if err != nil {
			return u, err
		}
		*dst = v
	}
	g, _, err := p.Scalar(ctx, gomaxprocsQuery(service, window), end)
	if err != nil {
		return u, err
	}
	u.GOMAXPROCS = int(g)
	return u, nil
}

// coreTimeSelector picks node-exporter's CPU-time counters of the given host CPUs, every mode.
func coreTimeSelector(cpus []int) string {
	names := make([]string, len(cpus))
	for i, c := range cpus {
		names[i] = strconv.Itoa(c)
	}
	return fmt.Sprintf(`node_cpu_seconds_total{job="node-exporter",cpu=~"%s"}`, strings.Join(names, "|"))
}

// coreTime turns the seconds each mode took into shares of their sum, in percent. ok is false
// when they add up to nothing.
func coreTime(byMode map[string]float64) (ct *record.CoreTime, ok bool) {
	var total float64
	for _, v := range byMode {
		total += v
	}
	if total <= 0 {
		return nil, false
	}
	pct := func(v float64) float64 { return math.Round(1000*v/total) / 10 }
	busy := byMode["user"] + byMode["system"] + byMode["softirq"] + byMode["irq"]
	ct = &record.CoreTime{
		UserPercent:    pct(byMode["user"]),
		SystemPercent:  pct(byMode["system"]),
		SoftirqPercent: pct(byMode["softirq"]),
		IrqPercent:     pct(byMode["irq"]),
		IdlePercent:    pct(byMode["idle"]),
		BusySeconds:    math.Round(1e6*busy) / 1e6,
		BusyPercent:    pct(busy),
	}
	ct.OtherPercent = pct(total - busy - byMode["idle"])
	return ct, true
}

// measureCores reads how the CPUs of cpuset spent [start, end]: each mode's counters read as
// raw samples around the window and interpolated at its ends, like the containers' CPU, so a
// window of a few seconds holds only its own time (rate() would need a longer one, reaching
// into the run before).
func measureCores(ctx context.Context, p *prom.Client, cpuset string, start, end time.Time) (*record.CoreTime, error) {
	cpus, err := scenario.ParseCPUSet(cpuset)
	if err != nil {
		return nil, err
	}
	series, err := p.Samples(ctx, coreTimeSelector(cpus), start.Add(-prom.CounterMargin), end.Add(prom.CounterMargin))
	if err != nil {
		return nil, err
	}
	perMode := map[string][]prom.Series{}
	for _, s := range series {
		perMode[s.Labels["mode"]] = append(perMode[s.Labels["mode"]], s)
	}
	byMode := map[string]float64{}
	for mode, ss := range perMode {
		if v, ok := prom.CounterDelta(ss, start, end); ok {
			byMode[mode] = v
		}
	}
	ct, ok := coreTime(byMode)
	if !ok {
		return nil, fmt.Errorf("node-exporter's CPU time of cpuset %s is not in Prometheus", cpuset)
	}
	return ct, nil
}

// processModes are the node-exporter CPU modes in which a process ran: what our containers'
// CPU (cAdvisor's cgroup time) can be set against. softirq and irq are the kernel's, charged to
// no cgroup, and idle, iowait and steal are nobody's.
const processModes = "user|nice|system"

// measureBusy is how many CPU seconds the CPUs of cpuset spent running processes over
// [start, end], read from the raw samples around the window like measureCores.
func measureBusy(ctx context.Context, p *prom.Client, cpuset string, start, end time.Time) (float64, error) {
	cpus, err := scenario.ParseCPUSet(cpuset)
	if err != nil {
		return 0, err
	}
	names := make([]string, len(cpus))
	for i, c := range cpus {
		names[i] = strconv.Itoa(c)
	}
	sel := fmt.Sprintf(`node_cpu_seconds_total{job="node-exporter",cpu=~"%s",mode=~"%s"}`, strings.Join(names, "|"), processModes)
	v, ok, err := p.Increase(ctx, sel, start, end)
	if err != nil {
		return 0, err
	}
	if !ok {
		return 0, fmt.Errorf("node-exporter's CPU time of cpuset %s is not in Prometheus", cpuset)
	}
	return v, nil
}

// measureServicesCPU is the CPU seconds the containers of the project's services used over
// [start, end], every run's (the observability stack outlives a run).
func measureServicesCPU(ctx context.Context, p *prom.Client, project string, services []string, start, end time.Time) (float64, error) {
	sel := fmt.Sprintf(`container_cpu_usage_seconds_total{container_label_com_docker_compose_project=%q,container_label_com_docker_compose_service=~"%s"}`,
		project, strings.Join(services, "|"))
	v, ok, err := p.Increase(ctx, sel, start, end)
	if err != nil {
		return 0, err
	}
	if !ok {
		return 0, fmt.Errorf("cAdvisor's CPU of %s is not in Prometheus", strings.Join(services, ", "))
	}
	return v, nil
}

// othersPercent is the share of n cores' time over window that processes other than ours
// used: busy less ours, never below 0 (the two are sampled apart, and a container's CPU
// charged to other cores than its cpuset's cannot happen).
func othersPercent(busy, ours float64, cores int, window time.Duration) float64 {
	if cores <= 0 || window <= 0 {
		return 0
	}
	v := 100 * (busy - ours) / (float64(cores) * window.Seconds())
	return math.Round(10*math.Max(v, 0)) / 10
}
