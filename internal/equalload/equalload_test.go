package equalload

import (
	"strings"
	"testing"

	"github.com/protobench/protobench/internal/record"
)

func capRec(target string, repeat int, rps float64, flags ...string) record.Record {
	return record.Record{Step: "getuser", Target: target, Tool: "protobench", Repeat: repeat, Model: "closed", ThroughputRPS: rps, Flags: append([]string{}, flags...)}
}

// TestRateIsAShareOfTheSlowerMedian: each target's capacity is the median of its usable
// repeats; the rate is the percentage of the slowest one, the same for every target.
func TestRateIsAShareOfTheSlowerMedian(t *testing.T) {
	recs := []record.Record{
		capRec("grpc", 1, 90000), capRec("grpc", 2, 100000), capRec("grpc", 3, 95000),
		capRec("rest", 1, 52000), capRec("rest", 2, 40000), capRec("rest", 3, 50000),
		// Not usable: a failed run, an errors-flagged one, another tool, another step.
		capRec("rest", 4, 1000, record.FlagFailed),
		capRec("rest", 5, 1000, record.FlagErrors),
		{Step: "getuser", Target: "rest", Tool: "wrk", ThroughputRPS: 1000, Flags: []string{}},
		{Step: "sweep", Target: "rest", Tool: "protobench", ThroughputRPS: 1000, Flags: []string{}},
	}
	caps, err := Capacities(recs, "getuser", "protobench", []string{"grpc", "rest"})
	if err != nil {
		t.Fatal(err)
	}
	if len(caps) != 2 || caps[0].RPS != 95000 || caps[0].N != 3 || caps[1].RPS != 50000 || caps[1].N != 3 {
		t.Fatalf("capacities %+v, want grpc 95000 (n=3) and rest 50000 (n=3)", caps)
	}
	for _, c := range []struct{ percent, want float64 }{{25, 12500}, {50, 25000}, {75, 37500}, {90, 45000}, {100, 50000}} {
		rate, slowest, err := Rate(caps, c.percent)
		if err != nil || rate != c.want || slowest.Target != "rest" {
			t.Errorf("Rate(%v %%) = %v from %s (%v), want %v from rest", c.percent, rate, slowest.Target, err, c.want)
		}
	}
	// The order of targets does not change which is slower.
	rev, _ := Capacities(recs, "getuser", "protobench", []string{"rest", "grpc"})
	if rate, _, _ := Rate(rev, 50); rate != 25000 {
		t.Errorf("reversed targets: rate %v, want 25000", rate)
	}
	for _, bad := range []float64{0, -5, 101} {
		if _, _, err := Rate(caps, bad); err == nil {
			t.Errorf("Rate(%v %%): want an error", bad)
		}
	}
}

// TestMissingCapacityIsNamed: a target the capacity step did not measure usably is named in
// the error, with what to do.
func TestMissingCapacityIsNamed(t *testing.T) {
	recs := []record.Record{capRec("grpc", 1, 90000), capRec("rest", 1, 5000, record.FlagClientBound)}
	_, err := Capacities(recs, "getuser", "protobench", []string{"grpc", "rest"})
	if err == nil || !strings.Contains(err.Error(), "rest") || !strings.Contains(err.Error(), "getuser") || !strings.Contains(err.Error(), "matrix.rate") {
		t.Fatalf("error %v, want one naming rest, getuser and the fixed-rate alternative", err)
	}
}

// TestTableMediansPerLoad: one row per load in order of load, each target's cell the median of
// its repeats, flags and incomplete counts carried.
func TestTableMediansPerLoad(t *testing.T) {
	run := func(step string, pct float64, target string, p99 float64, flags ...string) record.Record {
		return record.Record{Step: step, LoadPercent: pct, Rate: pct * 500, CapacityRPS: 50000, Model: "open", Target: target,
			ThroughputRPS: pct * 500, LatencyMs: record.Latency{P50: p99 / 4, P99: p99, P999: 2 * p99}, CPUMicrosPerRequest: 10, Incomplete: 1, Flags: append([]string{}, flags...)}
	}
	recs := []record.Record{
		run("el-load50", 50, "grpc", 1), run("el-load50", 50, "rest", 2), run("el-load50", 50, "grpc", 3), run("el-load50", 50, "rest", 4, record.FlagRateNotMet), run("el-load50", 50, "grpc", 2),
		run("el-load25", 25, "grpc", 0.5), run("el-load25", 25, "rest", 0.7),
		{Step: "getuser", Model: "closed", Target: "grpc", Flags: []string{}},
	}
	rows := Table(recs)
	if len(rows) != 2 || rows[0].LoadPercent != 25 || rows[1].LoadPercent != 50 {
		t.Fatalf("rows %+v, want 25 %% then 50 %%", rows)
	}
	r := rows[1]
	if r.Rate != 25000 || r.CapacityRPS != 50000 || len(r.Cells) != 2 || r.Cells[0].Target != "grpc" {
		t.Fatalf("row %+v", r)
	}
	g, s := r.Cells[0], r.Cells[1]
	if g.N != 3 || g.P99 != 2 || g.P999 != 4 || g.Incomplete != 3 {
		t.Errorf("grpc cell %+v, want n=3, p99 median 2, p99.9 4, incomplete 3", g)
	}
	if s.N != 2 || s.P99 != 3 || len(s.Flags) != 1 || s.Flags[0] != record.FlagRateNotMet {
		t.Errorf("rest cell %+v, want n=2, p99 median 3, flag rate-not-met", s)
	}
}
