package results

import (
	"strings"
	"testing"

	"github.com/protobench/protobench/internal/record"
)

func clockRec(server, client *record.Frequency) record.Record {
	return record.Record{Scenario: "s", Step: "a", Target: "grpc", Tool: "protobench", ThroughputRPS: 1000, Requests: 1000, DurationS: 1,
		Clock: &record.Clock{Server: server, Client: client}}
}

func TestClockDropRule(t *testing.T) {
	full := &record.Frequency{Min: 2900, Mean: 2950, Max: 3000}
	slight := &record.Frequency{Min: 2750, Mean: 2800, Max: 2900} // 8.3 % below 3000
	throttled := &record.Frequency{Min: 2000, Mean: 2500, Max: 3000}
	recs := []record.Record{
		clockRec(full, full),
		clockRec(slight, full),
		clockRec(full, throttled),
		{Scenario: "s", Step: "a", Target: "rest", Tool: "protobench", ThroughputRPS: 1000, Requests: 1000, DurationS: 1,
			Clock: &record.Clock{Note: "no cpufreq on this host"}},
	}
	ApplyFlags(recs)
	want := []bool{false, false, true, false}
	for i, r := range recs {
		if r.HasFlag(record.FlagClockDrop) != want[i] {
			t.Errorf("record %d: flags %v, want clock-drop %v", i, r.Flags, want[i])
		}
	}
	// The rule is recomputed: once the throttled record is gone, nothing is flagged.
	recs = recs[:2]
	ApplyFlags(recs)
	for i, r := range recs {
		if r.HasFlag(record.FlagClockDrop) {
			t.Errorf("record %d flagged after the drop left: %v", i, r.Flags)
		}
	}
}

func TestPlacementAndClockFlagsHaveLegends(t *testing.T) {
	legend := map[string]string{}
	for _, l := range FlagLegend() {
		legend[l[0]] = l[1]
	}
	for flag, advice := range map[string]string{
		record.FlagSMTShared:  "two physical cores",
		record.FlagMixedCores: "performance and efficiency",
		record.FlagClockDrop:  "set the governor to performance",
	} {
		if !strings.Contains(legend[flag], advice) {
			t.Errorf("legend of %s = %q, want it to say %q", flag, legend[flag], advice)
		}
	}
}
