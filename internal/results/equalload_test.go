package results

import (
	"bytes"
	"strings"
	"testing"

	"github.com/protobench/protobench/internal/record"
)

// TestSummaryEqualLoadTable: the equal-load runs become one table row per load and target, with
// the offered rate, the latency percentiles, CPU per request and the incomplete count.
func TestSummaryEqualLoadTable(t *testing.T) {
	mk := func(step string, pct float64, target string, p99 float64) record.Record {
		return record.Record{Scenario: "s", Step: step, Target: target, Tool: "protobench", Model: "open", Repeat: 1,
			Rate: pct * 400, LoadPercent: pct, CapacityRPS: 40000, CapacityStep: "getuser", ThroughputRPS: pct * 400,
			LatencyMs: record.Latency{P50: 0.2, P99: p99, P999: 2 * p99}, CPUMicrosPerRequest: 11, ServerCoreMicrosPerRequest: 16, Incomplete: 2, Flags: []string{}}
	}
	recs := []record.Record{mk("el-load90", 90, "grpc", 3), mk("el-load90", 90, "rest", 9), mk("el-load25", 25, "grpc", 0.5), mk("el-load25", 25, "rest", 0.8)}
	var b bytes.Buffer
	if err := WriteSummary(&b, nil, recs); err != nil {
		t.Fatal(err)
	}
	md := b.String()
	for _, want := range []string{
		"## Latency at equal load", "step getuser of this run (40,000 req/s)",
		"| 25 % | 10,000 | grpc | 1 | 10,000 | 0.2 | 0.5 | 1 | 11 | 16 | 2 | — |",
		"| 90 % | 36,000 | rest | 1 | 36,000 | 0.2 | 9 | 18 | 11 | 16 | 2 | — |",
	} {
		if !strings.Contains(md, want) {
			t.Errorf("summary lacks %q\n%s", want, md)
		}
	}
	if strings.Index(md, "| 25 % |") > strings.Index(md, "| 90 % |") {
		t.Error("rows not in order of load")
	}
}
