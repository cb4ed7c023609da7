package compare

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/protobench/protobench/internal/record"
	"github.com/protobench/protobench/internal/report"
	"github.com/protobench/protobench/internal/report/reporttest"
	"github.com/protobench/protobench/internal/stats"
)

// shifted is a copy of f whose every valid record is moved by its folder's shift for its row
// (common to the folder plus its own for the row, on the log scale) and by noise within the run.
func shifted(f *report.Folder, rng *rand.Rand, between, within float64) *report.Folder {
	g := *f
	g.Records = make([]record.Record, len(f.Records))
	copy(g.Records, f.Records)
	common := math.Sqrt(between/2) * rng.NormFloat64()
	type key struct{ step, target, tool string }
	row := map[key][2]float64{}
	for i := range g.Records {
		r := &g.Records[i]
		k := key{r.Step, r.Target, r.Tool}
		s, ok := row[k]
		if !ok {
			s = [2]float64{common + math.Sqrt(between/2)*rng.NormFloat64(), math.Sqrt(between) * rng.NormFloat64()}
			row[k] = s
		}
		r.ThroughputRPS *= math.Exp(s[0] + within*rng.NormFloat64())
		r.LatencyMs.P99 *= math.Exp(s[1] + within*rng.NormFloat64())
	}
	return &g
}

// TestAAThroughCompare: false discoveries through compare itself, when nothing changed but the
// host between runs. Each simulated comparison is two folders a side made from one real-shaped
// results folder (reporttest's plan: 18 steps and targets, closed and open rows), every folder
// moved by a between-run shift drawn from the spread of the real A/A kept in docs/statistics.md
// (RecordedCalibration: half of it shared by the folder's rows, half each row's own), with 3 %
// noise between repeats. Every faster or slower is then false, so the share of comparisons with
// any is the false discovery rate: at most 5 % within the simulation's error. The same folders
// judged on their repeats alone (the old compare: one folder a side tested as if its repeats
// were the runs) are logged beside it, to show what the between-run level does to that.
func TestAAThroughCompare(t *testing.T) {
	base, err := report.Load(reporttest.Folder(t, reporttest.Options{Jitter: 0.0, Repeat: 5}))
	if err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(38, 1))
	between := RecordedCalibration.Throughput.Var
	const compares = 1000
	anyCall, tests := 0, 0
	for range compares {
		folders := []*report.Folder{}
		for range 4 {
			folders = append(folders, shifted(base, rng, between, 0.03))
		}
		c, err := CompareLoaded(folders, [][]int{{0, 1}, {2, 3}}, Options{})
		if err != nil {
			t.Fatal(err)
		}
		tests = c.Tests
		counts := c.Counts()
		if counts[Faster]+counts[Slower] > 0 {
			anyCall++
		}
	}
	fdr := float64(anyCall) / compares
	limit := 0.05 + 3*math.Sqrt(0.05*0.95/compares)
	t.Logf("A/A through compare, 2 folders a side, between-run variance %.5f (log scale, %s), %d tests each: %d of %d comparisons made a call (%.2f %%)",
		between, RecordedCalibration.Source, tests, anyCall, compares, 100*fdr)
	if fdr > limit {
		t.Errorf("false discovery rate %.4f through compare, want at most 0.05 (+ simulation error, %.4f)", fdr, limit)
	}
	old := 0
	for range 300 {
		a, b := shifted(base, rng, between, 0.03), shifted(base, rng, between, 0.03)
		c, err := CompareLoaded([]*report.Folder{a, a, b, b}, [][]int{{0}, {2}}, Options{})
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range c.Rows {
			if r.Throughput.Verdict == Faster || r.Throughput.Verdict == Slower {
				t.Fatalf("one folder a side gave a verdict: %+v", r.Throughput)
			}
		}
		if ps := repeatsOnly(a, b); ps > 0 {
			old++
		}
	}
	t.Logf("the same A/A judged on one folder's repeats a side (the old way): %.0f %% of comparisons made a call", 100*float64(old)/300)
}

// repeatsOnly counts the rows a test on each folder's repeats alone calls changed (BH at 5 %):
// what compare did before it counted runs.
func repeatsOnly(a, b *report.Folder) int {
	c := &Comparison{Folders: []*report.Folder{a, b}, Sides: [][]int{{0}, {1}}, Opts: Options{}.withDefaults()}
	rows := c.compareSides([]int{0}, []int{1}, 1)
	calls := 0
	var ps []float64
	for _, r := range rows {
		if r.Model == "open" {
			continue
		}
		ts := logTestsOf(r)
		if ts.OK {
			ps = append(ps, ts.P)
		}
	}
	for _, p := range bh(ps) {
		if p <= FDR {
			calls++
		}
	}
	return calls
}

func logTestsOf(r Row) stats.Test {
	return stats.LogTests([]stats.TwoSample{{A: r.Base.Throughput, B: r.Other.Throughput}}, 0.95, stats.Prior{})[0]
}

func bh(ps []float64) []float64 { return stats.BenjaminiHochberg(ps) }
