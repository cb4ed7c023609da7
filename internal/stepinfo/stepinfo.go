// Package stepinfo tells Prometheus, by remote write, which benchmark step ran when and what it
// measured, and gives compose the labels that tie each container to its step.
//
// While a step runs, Begin writes protobench_step_info{run_id,scenario,step,repeat,target,tool}=1
// once a second; Finish ends that series with a staleness marker and writes the step's figures
// (req/s, p99, server CPU µs per request, errors) over its measured window. The dashboards draw
// each step_info series as an annotation region, join server and host series to it so they carry
// the step's labels, and read the step-summary table from the figures. Remote write (Prometheus'
// --web.enable-remote-write-receiver, which the compose stack sets for k6) needs nothing else to
// run: no port for Prometheus to reach on the host, no scrape config that depends on the machine.
package stepinfo

import (
	"context"
	"fmt"
	"math"
	"sort"
	"strconv"
	"sync"
	"time"

	"github.com/protobench/protobench/internal/record"
)

// Metric names the runner writes and the dashboards read.
const (
	InfoMetric        = "protobench_step_info"
	RPSMetric         = "protobench_step_requests_per_second"
	P99Metric         = "protobench_step_latency_p99_seconds"
	CPUPerReqMetric   = "protobench_step_server_cpu_microseconds_per_request"
	ErrorsMetric      = "protobench_step_errors"
	ErrorFracMetric   = "protobench_step_error_ratio"
	heartbeatInterval = time.Second
)

// LabelNames are the labels every step series and every container of a step carries, in the order
// the dashboards' variables list them.
var LabelNames = []string{"run_id", "scenario", "step", "repeat", "target", "tool"}

// Step identifies one planned run of a scenario.
type Step struct {
	RunID, Scenario, Step, Target, Tool string
	Repeat                              int
}

// Labels are the step's label values by name.
func (s Step) Labels() map[string]string {
	return map[string]string{
		"run_id": s.RunID, "scenario": s.Scenario, "step": s.Step,
		"repeat": strconv.Itoa(s.Repeat), "target": s.Target, "tool": s.Tool,
	}
}

// ComposeEnv is the interpolation environment that fills the `protobench.*` container labels of
// compose/docker-compose.yml (the x-step-labels anchor). cAdvisor exports container labels, so
// its series for the step's containers carry container_label_protobench_<name>.
func (s Step) ComposeEnv() map[string]string {
	env := map[string]string{}
	for k, v := range s.Labels() {
		env[ComposeEnvName(k)] = v
	}
	return env
}

// ComposeEnvName is the variable compose interpolates into the label protobench.<label>.
func ComposeEnvName(label string) string {
	b := []byte("PROTOBENCH_LABEL_")
	for _, c := range []byte(label) {
		if c >= 'a' && c <= 'z' {
			c -= 'a' - 'A'
		}
		b = append(b, c)
	}
	return string(b)
}

// Exporter writes step series to one Prometheus. The zero value is not usable; see New.
type Exporter struct {
	w    *Writer
	logf func(format string, args ...any)

	mu      sync.Mutex
	running map[Step]*beat
}

type beat struct {
	stop   chan struct{}
	done   chan struct{}
	last   time.Time // newest step_info sample written
	warned bool      // one failure is reported per step, not one a second
}

// New returns an exporter writing to the Prometheus at baseURL (as the host reaches it). logf
// gets failures, which never stop a run: a step without its annotation is still measured.
func New(baseURL string, logf func(format string, args ...any)) *Exporter {
	return &Exporter{w: NewWriter(baseURL), logf: logf, running: map[Step]*beat{}}
}

// Begin starts writing step_info for s once a second until Finish.
func (e *Exporter) Begin(ctx context.Context, s Step) {
	b := &beat{stop: make(chan struct{}), done: make(chan struct{})}
	e.mu.Lock()
	e.running[s] = b
	e.mu.Unlock()
	labels := s.Labels()
	write := func(now time.Time) {
		ts := now.Truncate(time.Millisecond)
		if err := e.w.Write(ctx, []Series{{Name: InfoMetric, Labels: labels, Samples: []Sample{{ts, 1}}}}); err != nil {
			if !b.warned && ctx.Err() == nil {
				e.logf("step annotation for %s: %v", s, err)
			}
			b.warned = true
			return
		}
		b.last = ts
	}
	write(time.Now())
	go func() {
		defer close(b.done)
		t := time.NewTicker(heartbeatInterval)
		defer t.Stop()
		for {
			select {
			case <-b.stop:
				return
			case <-ctx.Done():
				return
			case now := <-t.C:
				write(now)
			}
		}
	}()
}

// Finish ends s's step_info series and writes rec's figures over its measured window
// (rec.StartUnix to rec.EndUnix), one sample a second, so that any instant of the window, and any
// range query over it, sees them. A record without a window (a failed step) writes no figures.
func (e *Exporter) Finish(ctx context.Context, s Step, rec record.Record) {
	e.mu.Lock()
	b := e.running[s]
	delete(e.running, s)
	e.mu.Unlock()
	var series []Series
	if b != nil {
		close(b.stop)
		<-b.done
		end := time.Now().Truncate(time.Millisecond)
		if !end.After(b.last) {
			end = b.last.Add(time.Millisecond)
		}
		series = append(series, Series{Name: InfoMetric, Labels: s.Labels(), Samples: []Sample{{end, 1}, {end.Add(time.Millisecond), StaleNaN}}})
	}
	series = append(series, Figures(s, rec)...)
	if err := e.w.Write(ctx, series); err != nil {
		e.logf("step figures for %s: %v", s, err)
	}
}

// StaleNaN is Prometheus' staleness marker: a series written with it ends there instead of
// lingering for the 5-minute lookback, so that two steps on one target never overlap in a join.
var StaleNaN = math.Float64frombits(0x7ff0000000000002)

// Figures are the step-summary series of rec over its window, each ended by a staleness marker.
func Figures(s Step, rec record.Record) []Series {
	if rec.EndUnix <= rec.StartUnix || rec.StartUnix <= 0 {
		return nil
	}
	start := time.Unix(0, int64(rec.StartUnix*1e9)).Truncate(time.Millisecond)
	end := time.Unix(0, int64(rec.EndUnix*1e9)).Truncate(time.Millisecond)
	values := map[string]float64{
		RPSMetric:       rec.ThroughputRPS,
		P99Metric:       rec.LatencyMs.P99 / 1e3,
		ErrorsMetric:    float64(rec.Errors),
		ErrorFracMetric: rec.ErrorFraction(),
	}
	if rec.CPUMicrosPerRequest > 0 {
		values[CPUPerReqMetric] = rec.CPUMicrosPerRequest
	}
	names := make([]string, 0, len(values))
	for n := range values {
		names = append(names, n)
	}
	sort.Strings(names)
	var out []Series
	for _, name := range names {
		var samples []Sample
		for t := start; t.Before(end); t = t.Add(time.Second) {
			samples = append(samples, Sample{t, values[name]})
		}
		samples = append(samples, Sample{end, values[name]}, Sample{end.Add(time.Millisecond), StaleNaN})
		out = append(out, Series{Name: name, Labels: s.Labels(), Samples: samples})
	}
	return out
}

// String is the step as the runner prints it.
func (s Step) String() string {
	return fmt.Sprintf("%s/%s/%s r%d", s.Step, s.Target, s.Tool, s.Repeat)
}
