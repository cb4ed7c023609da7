package results

import (
	"testing"

	"github.com/protobench/protobench/internal/record"
)

func TestRunLine(t *testing.T) {
	for _, c := range []struct {
		name string
		rec  record.Record
		want string
	}{
		{"measured", record.Record{ThroughputRPS: 61895.6, LatencyMs: record.Latency{P99: 4.83}, ServerCPUPercentOfCap: 98.41},
			"61,896 req/s, p99 4.83 ms, server CPU 98.4 % of its cap"},
		{"sub-millisecond tail and flags", record.Record{ThroughputRPS: 812.4, LatencyMs: record.Latency{P99: 0.4567}, ServerCPUPercentOfCap: 12, Flags: []string{record.FlagNoisy, "busy-host"}},
			"812 req/s, p99 457 µs, server CPU 12.0 % of its cap [noisy, busy-host]"},
		{"no server CPU read", record.Record{ThroughputRPS: 10, LatencyMs: record.Latency{P99: 1500}},
			"10 req/s, p99 1.5 s"},
		{"failed", record.Record{Error: "--tls-ca: open /run/protobench/tls/ca.pem: no such file\nmore", Flags: []string{record.FlagFailed}},
			"failed: --tls-ca: open /run/protobench/tls/ca.pem: no such file"},
	} {
		if got := RunLine(c.rec); got != c.want {
			t.Errorf("%s: RunLine = %q, want %q", c.name, got, c.want)
		}
	}
}
