package runner

import (
	"testing"

	"github.com/protobench/protobench/internal/record"
	"github.com/protobench/protobench/internal/scenario"
)

// TestResolveRateWitnessTakesTheCapacityOthersMeasured: a cross-check tool that did not run the
// capacity step (k6 witnessing the equal-load step) is offered the rate our generator's capacity
// gives; a tool that ran it keeps its own.
func TestResolveRateWitnessTakesTheCapacityOthersMeasured(t *testing.T) {
	capRec := func(tool, target string, rps float64) record.Record {
		return record.Record{Step: "getuser", Tool: tool, Target: target, Model: "closed", ThroughputRPS: rps, Flags: []string{}}
	}
	recs := []record.Record{
		capRec("protobench", "grpc", 30000), capRec("protobench", "rest", 16000),
		capRec("wrk", "rest", 20000), capRec("wrk", "grpc", 40000),
	}
	plan := &scenario.Plan{Scenario: &scenario.Scenario{Steps: []scenario.Step{{Name: "equal-load", Targets: []string{"grpc", "rest"}}}}}
	for _, c := range []struct {
		tool string
		want float64
	}{{"k6", 4000}, {"protobench", 4000}, {"wrk", 5000}} {
		run := scenario.Run{BaseStep: "equal-load", Target: "grpc", Tool: c.tool, CapacityStep: "getuser", LoadPercent: 25}
		got, capacity, err := resolveRate(recs, plan, run)
		if err != nil {
			t.Fatalf("%s: %v", c.tool, err)
		}
		if got.Rate != c.want || capacity != c.want*4 {
			t.Errorf("%s: rate %v from capacity %v, want %v from %v", c.tool, got.Rate, capacity, c.want, c.want*4)
		}
	}
}
