package record

import (
	"encoding/json"
	"fmt"
	"io"
)

// TimeseriesVersion is the Version a reader of this package understands.
const TimeseriesVersion = 1

// Timeseries is one run's per-second timeline, so that stalls and warm-up drift can be seen
// where a run's single record hides them. `protobench load --timeseries FILE` writes it; the
// runner keeps it as raw/<run>.timeseries.json beside the run's result.
type Timeseries struct {
	Version  int    `json:"version"`
	Scenario string `json:"scenario,omitempty"`
	Step     string `json:"step,omitempty"`
	Target   string `json:"target"`
	Tool     string `json:"tool"`
	Method   string `json:"method"`
	Model    string `json:"model"` // closed or open
	// StartUnix and EndUnix bound the measured window, as in the run's Record. Every point's
	// TS counts from StartUnix.
	StartUnix float64 `json:"start_unix"`
	EndUnix   float64 `json:"end_unix"`
	IntervalS float64 `json:"interval_s"` // the nominal length of a point
	// Points are in time order: the warm-up first (Warmup set; the last of them closes at the
	// window's start, so its TS is 0 give or take the timer's lateness), then the measured window.
	Points []TimeseriesPoint `json:"points"`
}

// TimeseriesPoint is one interval of a run. Requests are attributed to the interval in which
// they completed.
type TimeseriesPoint struct {
	TS     float64 `json:"t_s"`    // end of the interval, seconds since the measured window began
	SpanS  float64 `json:"span_s"` // the interval's actual length; the last may hold the drain
	Warmup bool    `json:"warmup,omitempty"`

	Requests      int64   `json:"requests"` // completed in the interval, failed ones included
	Errors        int64   `json:"errors"`
	ThroughputRPS float64 `json:"throughput_rps"`
	TargetRPS     float64 `json:"target_rps,omitempty"` // open model: the schedule's rate
	// LatencyMs is what the user saw: in the open model it counts from the intended send time
	// (corrected for coordinated omission). ServiceTimeMs counts from the actual send; it is
	// set in the open model only, since in the closed model the two are the same.
	LatencyMs     PointLatency  `json:"latency_ms"`
	ServiceTimeMs *PointLatency `json:"service_time_ms,omitempty"`

	Inflight int64 `json:"inflight"` // requests in flight when the interval closed
	// SchedulerLagMaxMs is the longest any request of the interval waited past its intended
	// send time (open model).
	SchedulerLagMaxMs float64 `json:"scheduler_lag_max_ms,omitempty"`
}

// PointLatency is an interval's latency in milliseconds, at two significant digits. All are 0
// when no request completed in the interval.
type PointLatency struct {
	P50 float64 `json:"p50"`
	P99 float64 `json:"p99"`
	Max float64 `json:"max"`
}

// DecodeTimeseries reads a timeseries file, refusing a version this package does not know.
func DecodeTimeseries(r io.Reader) (*Timeseries, error) {
	var ts Timeseries
	if err := json.NewDecoder(r).Decode(&ts); err != nil {
		return nil, fmt.Errorf("timeseries: %w", err)
	}
	if ts.Version != TimeseriesVersion {
		return nil, fmt.Errorf("timeseries: version %d, want %d", ts.Version, TimeseriesVersion)
	}
	return &ts, nil
}
