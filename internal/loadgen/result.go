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
	r.Compression = cfg.Compression
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

// result reads the run's result once every goroutine has returned and the collector has ticked
// for the last time.
func (e *engine) result(c *collector) (*Result, error) {
	r := e.baseResult()
	dur := e.measuredWindow(r)
	lat, svc, lag := e.mergeRecorders(r)
	r.Workers = e.goroutines
	setHistogramFigures(r, lat, svc, lag)
	r.Series = c.series
	r.points = c.points
	if r.Series == nil {
		r.Series = []SeriesPoint{}
	}
	e.windowCounters(r, dur)
	e.serverCount(r)
	if dur > 0 {
		r.ThroughputRPS = round3(record.SuccessRPS(r.Requests, r.Errors, dur.Seconds()))
	}
	e.flag(r, dur)
	e.shared.note(r)
	sort.Strings(r.Flags)
	if r.Error != "" {
		return r, errors.New(r.Error)
	}
	return r, nil
}

// measuredWindow sets the window's bounds on r, ending it at an abort before the schedule's end,
// and returns its length (0 when the window never began).
func (e *engine) measuredWindow(r *Result) time.Duration {
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
	return dur
}

// mergeRecorders adds up every recorder's counts on r and returns their merged histograms; lag
// is nil in the closed model, which has no intended send times to lag behind.
func (e *engine) mergeRecorders(r *Result) (lat, svc, lag *hdr.Histogram) {
	lat, svc = NewHistogram(), NewHistogram()
	if e.cfg.Open() {
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
		r.WarmupRequests += rec.warm
		r.WarmupErrors += rec.warmErrors
		r.Incomplete += rec.incomplete
		r.Unsent += rec.unsent
		for code, n := range rec.codes {
			r.ErrorsByCode[code] += n
		}
		rec.mu.Unlock()
	}
	return lat, svc, lag
}

// setHistogramFigures reads every percentile, summary and spectrum of r from its histograms and
// exports them; lag is nil when there is no scheduler lag to report.
func setHistogramFigures(r *Result, lat, svc, lag *hdr.Histogram) {
	r.latency, r.service = lat, svc
	r.LatencyMs = Summary(lat)
	r.LatencyCount = lat.TotalCount()
	st := Summary(svc)
	r.ServiceTimeMs = &st
	if svc.TotalCount() > 0 {
		r.LatencyFloorMs = float64(svc.Min()) / 1000
	}
	r.LatencySpectrum = Spectrum(lat)
	r.ServiceSpectrum = Spectrum(svc)
	r.Histograms.Latency = EncodeHistogram(lat)
	r.Histograms.ServiceTime = EncodeHistogram(svc)
	if lag != nil {
		l := Summary(lag)
		r.SchedulerLagMs = &l
		r.Histograms.SchedulerLag = EncodeHistogram(lag)
	}
}

// windowCounters sets the bytes, messages and client CPU of the measured window: the totals now
// less the snapshots taken at its start.
func (e *engine) windowCounters(r *Result, dur time.Duration) {
	if !e.started.Load() {
		return
	}
	w := e.wireTotals()
	r.BytesSent = w[0] - e.start.wire[0]
	r.BytesReceived = w[1] - e.start.wire[1]
	r.MessagesReceived = w[2] - e.start.wire[2]
	compressed := w[3] - e.start.wire[3]
	r.ClientCompressedReplies = &compressed
	r.ClientCPUSeconds = round3(cpuSeconds() - e.start.cpu)
	if dur > 0 {
		r.ClientCPUPercent = round3(100 * r.ClientCPUSeconds / dur.Seconds())
	}
}

// serverCount replaces the requests with the server's own count where the server counts them
// (ZeroMQ PUSH has no replies), keeping what the client sent in ClientSent.
func (e *engine) serverCount(r *Result) {
	sc, ok := e.driver.(ServerCounter)
	if !ok || !e.started.Load() || !e.start.serverCounted {
		return
	}
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

// flag adds the flags that say why a number should not be taken at face value.
func (e *engine) flag(r *Result, dur time.Duration) {
	cfg := e.cfg
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
	if record.ClientLatency(r.Record) {
		r.Flags = append(r.Flags, record.FlagClientLatency)
	}
	if r.Requests == 0 {
		r.Flags = append(r.Flags, record.FlagFailed)
		if r.Error == "" {
			r.Error = "no request completed in the measured window"
		}
	}
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
