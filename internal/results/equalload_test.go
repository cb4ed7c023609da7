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

// TestSummaryEqualLoadCrossCheck: a witness tool's runs at the same loads stay out of the
// equal-load table and appear beside ours in the cross-check, with its margin and a verdict.
func TestSummaryEqualLoadCrossCheck(t *testing.T) {
	mk := func(tool, step, target string, p50, p99 float64, flags ...string) record.Record {
		return record.Record{Scenario: "s", Step: step, Target: target, Tool: tool, Model: "open", Repeat: 1,
			Rate: 4000, LoadPercent: 25, CapacityRPS: 16000, CapacityStep: "getuser", ThroughputRPS: 4000, Requests: 24000,
			LatencyMs: record.Latency{P50: p50, P99: p99, P999: 2 * p99}, Flags: append([]string{}, flags...)}
	}
	recs := []record.Record{
		mk("protobench", "equal-load-load25", "grpc", 0.4, 1.2), mk("protobench", "equal-load-load25", "rest", 0.5, 2),
		mk("k6", "equal-load-witness-load25", "grpc", 0.45, 1.3), mk("k6", "equal-load-witness-load25", "rest", 0.9, 2.1),
	}
	var b bytes.Buffer
	if err := WriteSummary(&b, nil, recs); err != nil {
		t.Fatal(err)
	}
	md := b.String()
	for _, want := range []string{
		"### Cross-check", "within 20 % of the larger value or 0.1 ms",
		"| 25 % | 4,000 | grpc | k6 | 0.4 | 0.45 | 1.2 | 1.3 | 1, 1 | agree |",
		"| 25 % | 4,000 | rest | k6 | 0.5 | 0.9 | 2 | 2.1 | 1, 1 | disagree: p50 apart by more than the margin |",
	} {
		if !strings.Contains(md, want) {
			t.Errorf("summary lacks %q\n%s", want, md)
		}
	}
	table := md[strings.Index(md, "## Latency at equal load"):strings.Index(md, "### Cross-check")]
	if n := strings.Count(table, "| 25 % |"); n != 2 {
		t.Errorf("the equal-load table has %d rows at 25 %%, want ours only (2):\n%s", n, table)
	}
}
