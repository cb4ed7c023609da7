package loadgen

import (
	"context"
	"errors"
	"runtime"
	"sort"
	"time"

	hdr "github.com/HdrHistogram/hdrhistogram-go"

	"github.com/protobench/protobench/internal/record"
)

// Result is the JSON result of one run. It embeds record.Record, so the common fields have the
// normalized record's names (requests, errors, throughput_rps, latency_ms, ...), and adds what
// only our own generator knows. README.md in this package documents every field.
type Result struct {
	record.Record

	TargetURL string `json:"target_url"`
	Pattern   string `json:"pattern,omitempty"`
	// MethodMix is how a mix's connections were split among its methods.
	MethodMix []MethodWeight    `json:"method_mix,omitempty"`
	Labels    map[string]string `json:"labels,omitempty"`
	WarmupS   float64           `json:"warmup_s"`
	Schedule  string            `json:"schedule,omitempty"` // the open model's pacer
	Workers   int               `json:"workers"`            // goroutines driving requests: workers, pipelines or event loops
	Args      []string          `json:"args,omitempty"`     // the command line, for reproducing the run

	ErrorsByCode  map[string]int64 `json:"errors_by_code"`
	BytesSent     int64            `json:"bytes_sent"`
	BytesReceived int64            `json:"bytes_received"`
	// MessagesReceived counts messages outside request/reply (ZeroMQ SUB fan-out copies).
	MessagesReceived int64 `json:"messages_received,omitempty"`
	// ClientSent is what the client sent when the server counted the requests (ZeroMQ PUSH).
	ClientSent         int64           `json:"client_sent,omitempty"`
	ClientCPUSeconds   float64         `json:"client_cpu_seconds"`
	ClientCPUPercent   float64         `json:"client_cpu_percent"` // of one core, over the window
	ClientGOMAXPROCS   int             `json:"client_gomaxprocs"`
	SchedulerLagMs     *record.Latency `json:"scheduler_lag_ms,omitempty"`
	Aborted            bool            `json:"aborted,omitempty"`
	Series             []SeriesPoint   `json:"series"`
	LatencySpectrum    []SpectrumPoint `json:"latency_spectrum"`
	ServiceSpectrum    []SpectrumPoint `json:"service_time_spectrum"`
	Histograms         HistogramExport `json:"histograms"`
	ServerCountWarning string          `json:"server_count_warning,omitempty"`
	// StartAt is the shared start the generator was given (--start-at, RFC 3339 UTC): it
	// waited StartWaitS for it with its connections open, or was ready StartLateS after it and
	// started at once (flagged late-start).
	StartAt    string  `json:"start_at,omitempty"`
	StartWaitS float64 `json:"start_wait_s,omitempty"`
	StartLateS float64 `json:"start_late_s,omitempty"`
	// Parts is set on a result merged from several generators that shared the step (Merge).
	Parts *MergeInfo `json:"parts,omitempty"`

	latency *hdr.Histogram
	service *hdr.Histogram
	points  []record.TimeseriesPoint
}

// HistogramExport carries the full histograms, losslessly.
type HistogramExport struct {
	Encoding     string `json:"encoding"` // hdrhistogram-v2-compressed-base64
	Unit         string `json:"unit"`     // us
	Latency      string `json:"latency"`
	ServiceTime  string `json:"service_time"`
	SchedulerLag string `json:"scheduler_lag,omitempty"`
}

// LatencyHistogram is the merged corrected-latency histogram in microseconds.
func (r *Result) LatencyHistogram() *hdr.Histogram { return r.latency }

// ServiceHistogram is the merged service-time histogram in microseconds.
func (r *Result) ServiceHistogram() *hdr.Histogram { return r.service }

// Timeseries is the run's per-second timeline, warm-up included (`--timeseries`).
func (r *Result) Timeseries() *record.Timeseries {
	ts := &record.Timeseries{
		Version: record.TimeseriesVersion, Scenario: r.Scenario, Step: r.Step,
		Target: r.Target, Tool: r.Tool, Method: r.Method, Model: r.Model,
		StartUnix: r.StartUnix, EndUnix: r.EndUnix, IntervalS: 1,
		Points: r.points,
	}
	if ts.Points == nil {
		ts.Points = []record.TimeseriesPoint{}
	}
	return ts
}

func (e *engine) baseResult() *Result {
	cfg := e.cfg
	r := &Result{
		Record: record.Record{
			Scenario:     cfg.Labels["scenario"],
			Step:         cfg.Labels["step"],
			Target:       cfg.TargetName,
			Tool:         "protobench",
			Method:       cfg.Method,
			Model:        "closed",
			Connections:  cfg.Connections,
			Concurrency:  cfg.Concurrency,
			PayloadBytes: cfg.PayloadBytes,
			Flags:        []string{},
		},
		TargetURL:        cfg.Target.URL,
		Pattern:          cfg.Pattern,
		MethodMix:        cfg.Mix,
		Labels:           cfg.Labels,
		WarmupS:          cfg.Warmup.Seconds(),
		ErrorsByCode:     map[string]int64{},
		ClientGOMAXPROCS: runtime.GOMAXPROCS(0),
		Series:           []SeriesPoint{},
		Histograms:       HistogramExport{Encoding: "hdrhistogram-v2-compressed-base64", Unit: "us"},
	}
	r.RequestsPerConnection = cfg.RequestsPerConnection
	if cfg.Open() {
		r.Model = "open"
		r.Rate = round3(MeanRate(cfg.Pacer))
		r.Schedule = describePacer(cfg.Pacer)
	}
	return r
}

func describePacer(p Pacer) string {
	if s, ok := p.(interface{ String() string }); ok {
		return s.String()
	}
	return ""
}

// failedResult is the result of a run that never started.
func (e *engine) failedResult(err error) *Result {
	r := e.baseResult()
	r.Error = err.Error()
	r.Flags = append(r.Flags, record.FlagFailed)
	now := float64(time.Now().UnixNano()) / 1e9
	r.StartUnix, r.EndUnix = now, now
	r.latency, r.service = NewHistogram(), NewHistogram()
	return r
}

func (e *engine) result(c *collector) (*Result, error) {
	cfg := e.cfg
	r := e.baseResult()
	ms := e.sched.MeasureStart()
	end := e.sched.End()
	e.mu.Lock()
	abortErr, abortAt := e.abortErr, e.abortAt
	e.mu.Unlock()
	if abortErr != nil && abortAt.Before(end) {
		end = abortAt
		r.Aborted = true
		r.Error = abortErr.Error()
	}
	dur := end.Sub(ms)
	if dur < 0 || !e.started.Load() {
		dur = 0
	}
	r.DurationS = round3(dur.Seconds())
	r.StartUnix = float64(ms.UnixNano()) / 1e9
	r.EndUnix = float64(ms.Add(dur).UnixNano()) / 1e9

	lat, svc := NewHistogram(), NewHistogram()
	var lag *hdr.Histogram
	if cfg.Open() {
		lag = NewHistogram()
	}
	for _, rec := range e.recorders {
		rec.mu.Lock()
		lat.Merge(rec.latency)
		svc.Merge(rec.service)
		if lag != nil {
			lag.Merge(rec.lag)
		}
		r.Requests += rec.requests
		r.Errors += rec.errors
		r.Incomplete += rec.incomplete
		r.Unsent += rec.unsent
		for code, n := range rec.codes {
			r.ErrorsByCode[code] += n
		}
		rec.mu.Unlock()
	}
	r.latency, r.service = lat, svc
	r.Workers = e.goroutines
	r.LatencyMs = Summary(lat)
	r.LatencyCount = lat.TotalCount()
	st := Summary(svc)
	r.ServiceTimeMs = &st
	r.LatencySpectrum = Spectrum(lat)
	r.ServiceSpectrum = Spectrum(svc)
	r.Histograms.Latency = EncodeHistogram(lat)
	r.Histograms.ServiceTime = EncodeHistogram(svc)
	if lag != nil {
		l := Summary(lag)
		r.SchedulerLagMs = &l
		r.Histograms.SchedulerLag = EncodeHistogram(lag)
	}
	r.Series = c.series
	r.points = c.points
	if r.Series == nil {
		r.Series = []SeriesPoint{}
	}

	if e.started.Load() {
		w := e.wireTotals()
		r.BytesSent = w[0] - e.start.wire[0]
		r.BytesReceived = w[1] - e.start.wire[1]
		r.MessagesReceived = w[2] - e.start.wire[2]
		r.ClientCPUSeconds = round3(cpuSeconds() - e.start.cpu)
		if dur > 0 {
			r.ClientCPUPercent = round3(100 * r.ClientCPUSeconds / dur.Seconds())
		}
	}
	if sc, ok := e.driver.(ServerCounter); ok && e.started.Load() && e.start.serverCounted {
		n, err := e.settledServerCount(sc)
		switch {
		case e.start.serverCountErr != nil:
			r.ServerCountWarning = "server count at start: " + e.start.serverCountErr.Error()
		case err != nil:
			r.ServerCountWarning = "server count at end: " + err.Error()
		default:
			r.ClientSent = r.Requests
			r.Requests = n - e.start.serverCountStart
		}
	}
	if dur > 0 {
		r.ThroughputRPS = round3(record.SuccessRPS(r.Requests, r.Errors, dur.Seconds()))
	}

	// Flags say why a number should not be taken at face value.
	if cfg.Open() && dur > 0 {
		planned := plannedHits(cfg.Pacer, dur)
		if planned > 0 && float64(r.Requests) < 0.95*float64(planned) {
			r.Flags = append(r.Flags, record.FlagRateNotMet)
		}
	}
	if r.Incomplete > 0 && float64(r.Incomplete) > record.IncompleteFlagFraction*float64(r.Requests+r.Incomplete) {
		r.Flags = append(r.Flags, record.FlagIncomplete)
	}
	if r.Requests > 0 && float64(r.Errors) > 0.01*float64(r.Requests) {
		r.Flags = append(r.Flags, record.FlagErrors)
	}
	if r.Requests == 0 {
		r.Flags = append(r.Flags, record.FlagFailed)
		if r.Error == "" {
			r.Error = "no request completed in the measured window"
		}
	}
	e.shared.note(r)
	sort.Strings(r.Flags)
	if r.Error != "" {
		return r, errors.New(r.Error)
	}
	return r, nil
}

// plannedHits is how many hits the measured schedule holds in its first d.
func plannedHits(p Pacer, d time.Duration) int64 {
	if d >= p.Length() {
		return p.Hits()
	}
	// Binary search the first hit due at or after d.
	lo, hi := int64(0), p.Hits()
	for lo < hi {
		mid := (lo + hi) / 2
		if due, _ := p.Due(mid); due < d {
			lo = mid + 1
		} else {
			hi = mid
		}
	}
	return lo
}

// settledServerCount reads the server's count until it stops moving: messages still queued in
// socket buffers when the schedule ended arrive a little later.
func (e *engine) settledServerCount(sc ServerCounter) (int64, error) {
	deadline := time.Now().Add(e.opts.DrainTimeout)
	var last int64 = -1
	for {
		ctx, cancel := context.WithTimeout(context.Background(), e.cfg.ConnectTimeout)
		n, err := sc.ServerCount(ctx, e.cfg)
		cancel()
		if err != nil {
			return 0, err
		}
		if n == last || time.Now().After(deadline) {
			return n, nil
		}
		last = n
		time.Sleep(200 * time.Millisecond)
	}
}

// abandonUnclaimed counts the measured tickets of an open schedule that no worker ever claimed
// (the schedule ran past the point where workers could keep up, or every worker was stuck on a
// server that stopped answering) as unsent: each enters the latency with the time from its
// intended send to runEnd, so a stall cannot shorten the latency by hiding the requests it kept
// from being sent. It runs before the collector's last tick, so the live histogram a dashboard
// reads holds them too. A run aborted before its end has no such tickets: its window ends at
// the abort.
func (e *engine) abandonUnclaimed(runEnd time.Time) {
	if !e.cfg.Open() || !e.started.Load() || e.abortedEarly() {
		return
	}
	s := e.sched
	total := s.pacer.Hits()
	for i := min(s.Issued(), total); i < total; i++ {
		due, ok := s.pacer.Due(i)
		if !ok {
			break
		}
		intended := s.start.Add(due)
		if intended.Before(s.measureStart) {
			continue
		}
		e.recorders[0].abandon(Ticket{Intended: intended, Measured: true}, runEnd, false)
	}
}

// abortedEarly reports whether the run was aborted before its schedule's end.
func (e *engine) abortedEarly() bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.abortErr != nil && e.abortAt.Before(e.sched.End())
}
