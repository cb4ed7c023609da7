package measure

import (
	"context"
	"errors"
	"fmt"
	"math"
	"time"

	"github.com/protobench/protobench/internal/record"
	"github.com/protobench/protobench/internal/scenario"
)

// ToolRun is what the runner knows of a run's tool once it has finished.
type ToolRun struct {
	Parsed record.Record // what the tool's adapter parsed from its output
	// Started and Ended are the runner's clock around the tool, or the container's own start
	// and finish when Lifetime is set (an engine that reports them, OneOff.Window).
	Started, Ended time.Time
	Lifetime       bool
	Warmup         time.Duration // the tool's own warm-up, inside its run
	Server, Client string        // the compose services of the server and the tool
}

// stackServices are the observability stack's compose services: where the stack shares a
// side's cores, their CPU is ours, not other processes'.
var stackServices = []string{"prometheus", "cadvisor", "node-exporter", "grafana"}

// Read sets the record's measured window from the tool's run, waits until Prometheus holds the
// samples that cover its end, and reads the server's and the tool's usage, how the cores spent
// the window, a TLS server's handshakes and what other processes used. It returns false when ctx
// was cancelled during the wait: the record then has no usage.
func (s *Measurer) Read(ctx context.Context, rec *record.Record, r scenario.Run, t ToolRun) bool {
	start, end := measuredWindow(t.Parsed, t.Started, t.Ended)
	if t.Lifetime {
		start, end = lifetimeWindow(t.Parsed, t.Started, t.Ended, t.Warmup)
	}
	rec.StartUnix = float64(start.UnixNano()) / 1e9
	rec.EndUnix = float64(end.UnixNano()) / 1e9
	// Prometheus scrapes every second and cAdvisor refreshes every second: wait for the samples
	// that cover the end of the window before asking for them. The wait counts as cool-down,
	// since nothing runs meanwhile.
	if err := s.Meter.WaitCovered(ctx, t.Server, end, s.Settle+2*time.Second); err != nil {
		if ctx.Err() != nil {
			return false
		}
		s.Log("warning: %s: %v", r.ID, err)
	}
	s.addUsage(ctx, rec, r, t.Server, t.Client, start, end)
	s.addCores(ctx, rec, r, start, end)
	s.addClock(ctx, rec, r, start, end)
	s.addTLS(ctx, rec, r, start, end)
	s.addEncodings(ctx, rec, r, t.Server, start, end)
	s.addWire(ctx, rec, r, t.Server, start, end)
	s.addOthers(ctx, rec, r, t.Server, t.Client, start, end)
	return true
}

// addCores records how the server's cores and the tools' spent the window, where the layout's
// cpusets are cores of this host (compose, not swarm) and the two sides do not share them.
func (s *Measurer) addCores(ctx context.Context, rec *record.Record, r scenario.Run, start, end time.Time) {
	if !s.HostCores || r.Layout.Shared || r.Layout.ServerCPUSet == "" || r.Layout.ClientCPUSet == "" {
		return
	}
	for _, side := range []struct {
		name, cpuset string
		dst          **record.CoreTime
	}{
		{"server", r.Layout.ServerCPUSet, &rec.ServerCores},
		{"client", r.Layout.ClientCPUSet, &rec.ClientCores},
	} {
		ct, err := s.Meter.Cores(ctx, side.cpuset, start, end)
		if err != nil {
			s.Log("warning: how the %s's cores (cpuset %s) spent %s: %v", side.name, side.cpuset, r.ID, err)
			continue
		}
		*side.dst = ct
	}
	if rec.ServerCores == nil {
		return
	}
	if rec.ObservabilityCPUSet != "" && cpusetsOverlap(rec.ObservabilityCPUSet, r.Layout.ServerCPUSet) {
		obs, err := s.stackCPUSeconds(ctx, start, end)
		if err != nil {
			s.Log("warning: the observability stack's CPU on the server's cores during %s: %v", r.ID, err)
		}
		chargeStack(rec.ServerCores, obs, end.Sub(start), r.Layout.ServerCPUSet)
	}
	if rec.Requests > 0 {
		rec.ServerCoreMicrosPerRequest = math.Round(1e3*(rec.ServerCores.BusySeconds-rec.ServerCores.ObservabilitySeconds)*1e6/float64(rec.Requests)) / 1e3
	}
}

// stackCPUSeconds is the observability stack's container CPU over [start, end].
func (s *Measurer) stackCPUSeconds(ctx context.Context, start, end time.Time) (float64, error) {
	var total float64
	var errs []error
	for _, svc := range s.Observability {
		u, err := s.Meter.StackUsage(ctx, svc, start, end)
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", svc, err))
			continue
		}
		total += u.CPUSeconds
	}
	return total, errors.Join(errs...)
}

// chargeStack takes the observability stack's CPU-seconds (obs, measured while it shared the
// server's cores) out of the cores' busy share: that work is the benchmark's, not the server's.
func chargeStack(ct *record.CoreTime, obs float64, window time.Duration, cpuset string) {
	cpus, err := scenario.ParseCPUSet(cpuset)
	if err != nil || len(cpus) == 0 || window <= 0 || obs <= 0 {
		return
	}
	obs = min(obs, ct.BusySeconds)
	ct.ObservabilitySeconds = math.Round(1e6*obs) / 1e6
	capacity := window.Seconds() * float64(len(cpus))
	ct.BusyPercent = math.Max(0, math.Round(10*(ct.BusyPercent-100*obs/capacity))/10)
}

// cpusetsOverlap reports whether two cpuset strings share a CPU.
func cpusetsOverlap(a, b string) bool {
	as, err1 := scenario.ParseCPUSet(a)
	bs, err2 := scenario.ParseCPUSet(b)
	if err1 != nil || err2 != nil {
		return false
	}
	for _, x := range as {
		for _, y := range bs {
			if x == y {
				return true
			}
		}
	}
	return false
}

// addOthers records, beside each side's core time, the share of its cores that processes
// other than ours used: the cores' process time less the CPU of our containers pinned there
// (the server on the server's cores, the tool on the tool's, the observability stack where it
// sat). Only where addCores measured the cores: on swarm the cpusets are not this host's.
func (s *Measurer) addOthers(ctx context.Context, rec *record.Record, r scenario.Run, serverService, toolService string, start, end time.Time) {
	if rec.ServerCores == nil && rec.ClientCores == nil {
		return
	}
	stackAt := rec.ObservabilityCPUSet
	if stackAt == "" {
		stackAt = r.Layout.ObservabilityCPUSet
	}
	for _, side := range []struct {
		name, cpuset, service string
		ct                    *record.CoreTime
	}{
		{"server", r.Layout.ServerCPUSet, serverService, rec.ServerCores},
		{"client", r.Layout.ClientCPUSet, toolService, rec.ClientCores},
	} {
		if side.ct == nil {
			continue
		}
		cpus, err := scenario.ParseCPUSet(side.cpuset)
		if err != nil {
			continue
		}
		services := []string{side.service}
		if stackAt == side.cpuset {
			services = append(services, stackServices...)
		}
		busy, err := s.Meter.Busy(ctx, side.cpuset, start, end)
		if err == nil {
			var ours float64
			if ours, err = s.Meter.ServicesCPU(ctx, services, start, end); err == nil {
				v := othersPercent(busy, ours, len(cpus), end.Sub(start))
				side.ct.OthersPercent = &v
				continue
			}
		}
		s.Log("warning: what other processes used of the %s's cores (cpuset %s) during %s: %v", side.name, side.cpuset, r.ID, err)
	}
}

// addUsage fills the server and client CPU fields and the flags that depend on them.
func (s *Measurer) addUsage(ctx context.Context, rec *record.Record, r scenario.Run, serverService, clientService string, start, end time.Time) {
	window := end.Sub(start).Seconds()
	server, err := s.Meter.Usage(ctx, serverService, start, end)
	if err != nil {
		s.Log("warning: server usage for %s: %v", r.ID, err)
		return
	}
	if server.Samples == 0 {
		s.Log("warning: Prometheus holds no cAdvisor samples for %s during %s", serverService, r.ID)
	}
	rec.ServerCPUSeconds = server.CPUSeconds
	rec.ServerMemMaxBytes = server.MemMaxBytes
	rec.ServerThrottledSeconds = server.ThrottledSeconds
	if window > 0 && r.Caps.ServerCPUs > 0 {
		rec.ServerCPUPercentOfCap = 100 * server.CPUSeconds / window / r.Caps.ServerCPUs
	}
	if rec.Requests > 0 {
		rec.CPUMicrosPerRequest = server.CPUSeconds * 1e6 / float64(rec.Requests)
	}
	// Throttling of a few percent of the window means the quota, not the work, set the pace.
	if window > 0 && server.ThrottledSeconds > 0.05*window {
		rec.AddFlag(record.FlagThrottled)
	}
	rec.ServerGOMAXPROCS = server.GOMAXPROCS
	client, err := s.Meter.Usage(ctx, clientService, start, end)
	if err != nil {
		s.Log("warning: client usage for %s: %v", r.ID, err)
		return
	}
	if window > 0 && r.Caps.ClientCPUs > 0 {
		rec.ClientCPUPercentOfCap = 100 * client.CPUSeconds / window / r.Caps.ClientCPUs
	}
	if rec.ClientCPUPercentOfCap >= record.ClientBoundPercent {
		rec.AddFlag(record.FlagClientBound)
	}
}

// addTLS records a TLS run's handshake state from its server.
func (s *Measurer) addTLS(ctx context.Context, rec *record.Record, r scenario.Run, start, end time.Time) {
	if !r.TLS {
		return
	}
	st, err := s.Meter.TLS(ctx, r.Target, start, end)
	if err != nil {
		s.Log("warning: %s: TLS state: %v", r.ID, err)
		rec.TLS = &record.TLSState{Source: err.Error()}
		return
	}
	rec.TLS = st
}
