package record

import "testing"

func TestClientLatency(t *testing.T) {
	lag := func(p99 float64) *Latency { return &Latency{P99: p99} }
	for _, c := range []struct {
		name string
		r    Record
		want bool
	}{
		{"lag a fifth of p99", Record{Model: "open", LatencyMs: Latency{P99: 10}, SchedulerLagMs: lag(2)}, true},
		{"issue 36's gRPC at 4,000/s", Record{Model: "open", LatencyMs: Latency{P99: 14}, SchedulerLagMs: lag(3.2)}, true},
		{"lag below", Record{Model: "open", LatencyMs: Latency{P99: 14}, SchedulerLagMs: lag(2.7)}, false},
		{"no lag recorded (another tool)", Record{Model: "open", LatencyMs: Latency{P99: 14}}, false},
		{"closed model", Record{Model: "closed", LatencyMs: Latency{P99: 1}, SchedulerLagMs: lag(1)}, false},
	} {
		if got := ClientLatency(c.r); got != c.want {
			t.Errorf("%s: ClientLatency = %v, want %v", c.name, got, c.want)
		}
	}
}
