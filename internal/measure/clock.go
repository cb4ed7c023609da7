package measure

import (
	"context"
	"fmt"
	"math"
	"strings"
	"time"

	"github.com/protobench/protobench/internal/hostclock"
	"github.com/protobench/protobench/internal/prom"
	"github.com/protobench/protobench/internal/record"
	"github.com/protobench/protobench/internal/scenario"
)

// frequencySource names where a record's clock came from.
const (
	frequencyFromNodeExporter = "node-exporter node_cpu_scaling_frequency_hertz"
	frequencyFromSysfs        = "sysfs cpufreq/scaling_cur_freq, sampled every second by the runner"
)

// Frequency reads node-exporter's cpufreq samples of the host CPUs of cpuset stored in
// [start, end]: their lowest, mean and highest, in MHz.
func (m Prom) Frequency(ctx context.Context, cpuset string, start, end time.Time) (*record.Frequency, error) {
	cpus, err := scenario.ParseCPUSet(cpuset)
	if err != nil {
		return nil, err
	}
	sel := strings.Replace(coreTimeSelector(cpus), "node_cpu_seconds_total", "node_cpu_scaling_frequency_hertz", 1)
	series, err := m.c.Samples(ctx, sel, start, end)
	if err != nil {
		return nil, err
	}
	return frequencyOf(series)
}

func frequencyOf(series []prom.Series) (*record.Frequency, error) {
	var mhz []float64
	for _, s := range series {
		for _, p := range s.Points {
			mhz = append(mhz, math.Round(p.V/1e5)/10)
		}
	}
	if f := hostclock.Summarize(mhz); f != nil {
		return f, nil
	}
	return nil, fmt.Errorf("no node_cpu_scaling_frequency_hertz in Prometheus")
}

// addClock records the clock of the server's and the tool's cores over the window, their
// governor and the power source, where the layout's cpusets are this host's cores. Each figure
// comes from node-exporter, else from the runner's own sysfs samples; what neither has is
// named in the record's note, never left as a zero.
func (s *Measurer) addClock(ctx context.Context, rec *record.Record, r scenario.Run, start, end time.Time) {
	if !s.HostCores || r.Layout.ServerCPUSet == "" || r.Layout.ClientCPUSet == "" {
		return
	}
	root := s.SysRoot
	if root == "" {
		root = "/"
	}
	c := &record.Clock{}
	var notes []string
	sources := map[string]bool{}
	for _, side := range []struct {
		name, cpuset string
		dst          **record.Frequency
	}{
		{"server", r.Layout.ServerCPUSet, &c.Server},
		{"client", r.Layout.ClientCPUSet, &c.Client},
	} {
		f, err := s.Meter.Frequency(ctx, side.cpuset, start, end)
		if f != nil {
			*side.dst = f
			sources[frequencyFromNodeExporter] = true
			continue
		}
		cpus, _ := scenario.ParseCPUSet(side.cpuset)
		if f = s.Clock.Window(cpus, start, end); f != nil {
			*side.dst = f
			sources[frequencyFromSysfs] = true
			continue
		}
		why := err.Error()
		if s.Clock == nil {
			why += "; " + hostclock.ErrNoCpufreq.Error()
		}
		notes = append(notes, fmt.Sprintf("%s's clock not available: %s", side.name, why))
	}
	serverCPUs, _ := scenario.ParseCPUSet(r.Layout.ServerCPUSet)
	var more []string
	c.Power, c.Governor, more = hostclock.Describe(root, serverCPUs)
	notes = append(notes, more...)
	for src := range sources {
		c.Source = strings.TrimPrefix(c.Source+"; "+src, "; ")
	}
	c.Note = strings.Join(notes, "; ")
	rec.Clock = c
}
