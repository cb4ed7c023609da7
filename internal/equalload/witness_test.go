package equalload

import (
	"testing"

	"github.com/protobench/protobench/internal/record"
)

func openRec(tool, target string, load, p50, p99 float64, flags ...string) record.Record {
	return record.Record{Step: "equal-load-load" + fmtPercent(load), Tool: tool, Target: target, Model: "open",
		LoadPercent: load, Rate: 40 * load, Requests: 1000, ThroughputRPS: 40 * load,
		LatencyMs: record.Latency{P50: p50, P99: p99}, Flags: append([]string{}, flags...)}
}

func fmtPercent(x float64) string { return map[float64]string{25: "25", 50: "50"}[x] }

// TestWitnessVerdicts: each target at each load pairs our cell with the witness's; p50 and p99
// within the margin agree, beyond it disagree (naming which), and a spoiled side gives none.
func TestWitnessVerdicts(t *testing.T) {
	recs := []record.Record{
		// 25 %: rest agrees (p99 under a fifth apart, p50 within the absolute floor); grpc's
		// p99 is a third apart.
		openRec(Primary, "rest", 25, 0.30, 2.0), openRec(Primary, "rest", 25, 0.32, 2.2),
		openRec("k6", "rest", 25, 0.38, 2.6),
		openRec(Primary, "grpc", 25, 0.40, 1.0),
		openRec("k6", "grpc", 25, 0.45, 1.5),
		// 50 %: k6 could not hold the rate on grpc; rest's p50 is twice ours.
		openRec(Primary, "grpc", 50, 0.5, 3.0),
		openRec("k6", "grpc", 50, 0.5, 3.0, record.FlagRateNotMet),
		openRec(Primary, "rest", 50, 1.0, 4.0),
		openRec("k6", "rest", 50, 2.0, 4.0),
		// A witness with no run of ours at its load is not paired.
		openRec("k6", "rest", 75, 1.0, 4.0),
	}
	got := Witnesses(recs)
	want := []struct {
		load            float64
		target, verdict string
		why             string
	}{
		{25, "grpc", VerdictDisagree, "p99 apart by more than the margin"},
		{25, "rest", VerdictAgree, ""},
		{50, "grpc", VerdictNoVerdict, "k6 was rate-not-met"},
		{50, "rest", VerdictDisagree, "p50 apart by more than the margin"},
	}
	if len(got) != len(want) {
		t.Fatalf("got %d witnesses %+v, want %d", len(got), got, len(want))
	}
	for i, w := range want {
		g := got[i]
		if g.LoadPercent != w.load || g.Target != w.target || g.Tool != "k6" || g.Verdict != w.verdict || g.Why != w.why {
			t.Errorf("witness %d: %v %% %s %s: %s (%s), want %v %% %s k6: %s (%s)", i, g.LoadPercent, g.Target, g.Tool, g.Verdict, g.Why, w.load, w.target, w.verdict, w.why)
		}
	}
	if got[1].Ours.N != 2 || got[1].Ours.P50 != 0.31 || got[1].Rate != 1000 {
		t.Errorf("rest at 25 %%: ours n %d p50 %v rate %v, want the median of 2 repeats, 0.31, at 1000/s", got[1].Ours.N, got[1].Ours.P50, got[1].Rate)
	}
	// The equal-load table is ours alone.
	for _, row := range Table(recs) {
		for _, c := range row.Cells {
			if row.LoadPercent == 75 {
				t.Errorf("the table has a row for a load only the witness ran: %+v", row)
			}
			if row.LoadPercent == 50 && c.Target == "rest" && c.P50 != 1.0 {
				t.Errorf("rest at 50 %%: p50 %v, want ours (1.0), not mixed with the witness's", c.P50)
			}
		}
	}
}

func TestAgreeMargin(t *testing.T) {
	for _, c := range []struct {
		a, b float64
		want bool
	}{
		{10, 12.5, true}, {10, 12.6, false}, {0.2, 0.29, true}, {0.2, 0.31, false}, {5, 5, true}, {12.6, 10, false},
	} {
		if got := Agree(c.a, c.b); got != c.want {
			t.Errorf("Agree(%v, %v) = %v, want %v", c.a, c.b, got, c.want)
		}
	}
}
