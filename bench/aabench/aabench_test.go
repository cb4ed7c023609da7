package aabench

import (
	"context"
	"io"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/protobench/protobench/internal/gate"
	"github.com/protobench/protobench/internal/stats"
)

// fakeRun is a gate run's result as gate.json has it: a paired ratio with its t interval at n
// pairs, drawn from a pair spread sd around a true ratio.
func fakeRun(rng *rand.Rand, cpu string, truth, sd float64, n int) Run {
	var logs []float64
	for range n {
		logs = append(logs, math.Log(truth)+sd*rng.NormFloat64())
	}
	num := make([]float64, n)
	den := make([]float64, n)
	for i, l := range logs {
		num[i], den[i] = math.Exp(l), 1
	}
	ratio, ci := stats.PairedRatio(num, den, 0.95)
	res := gate.Decide(nil, 0.05)
	res.Ratio, res.CI, res.Pairs = ratio, ci, n
	res.LogSE = math.Log(ci.Hi/ratio) / stats.TQuantile(0.975, float64(n-1))
	res.BaseRPS = 20000 * math.Exp(0.05*rng.NormFloat64())
	return Run{HeadCPU: cpu, Exit: gate.ExitInconclusive, Result: res}
}

// TestSummarize: from simulated A/A runs of a known pair spread, bench-aa's report recovers the
// spread, counts false alarms near 5 % with a Clopper–Pearson interval, derives power and the
// repeats 80 % power at 5 % takes (at pair spread 0.03 and 5 repeats: well under 80 %), and the
// between-run variance of the baseline (0.05² on the log scale).
func TestSummarize(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	var runs []Run
	for range 400 {
		runs = append(runs, fakeRun(rng, "", 1, 0.03, 5))
	}
	for range 100 {
		runs = append(runs, fakeRun(rng, "5us", 0.90, 0.03, 5))
	}
	r := Summarize(runs, 5)
	aa, slowed := r.Conditions[0], r.Conditions[1]
	t.Logf("A/A: %d of %d called (%.3f–%.3f); slowed: %d of %d found; pair sd %.4f; power 5 %% %.2f, 10 %% %.2f; repeats for 80 %% at 5 %%: %d; between-run var %.5f",
		aa.Calls, aa.Runs, aa.Rate.Lo, aa.Rate.Hi, slowed.Calls, slowed.Runs, r.PairSD, r.Power5, r.Power10, r.RepeatsFor80At5, r.Calibration.Throughput.Var)
	if !aa.Rate.Contains(0.05) || aa.Rate.Method != stats.MethodClopperPearson {
		t.Errorf("A/A false alarms %d of %d, interval %+v: want it to hold 5 %%", aa.Calls, aa.Runs, aa.Rate)
	}
	if math.Abs(r.PairSD-0.03) > 0.005 {
		t.Errorf("pair spread %.4f, want about 0.03", r.PairSD)
	}
	if r.Power5 >= 0.8 || r.Power10 <= r.Power5 || r.RepeatsFor80At5 <= 5 {
		t.Errorf("power at 5 %% %.2f, at 10 %% %.2f, repeats for 80 %% %d", r.Power5, r.Power10, r.RepeatsFor80At5)
	}
	if got := stats.Power(1.05, 0.03/math.Sqrt(float64(r.RepeatsFor80At5)), float64(r.RepeatsFor80At5-1), 0.05); got < 0.8 {
		t.Errorf("at %d repeats the power is %.2f", r.RepeatsFor80At5, got)
	}
	if v := r.Calibration.Throughput.Var; math.Abs(v-0.0025) > 0.0008 || r.Calibration.Throughput.DF != 399 {
		t.Errorf("between-run variance %.5f on %v df, want about 0.0025 on 399", v, r.Calibration.Throughput.DF)
	}
	md := string(r.Markdown(settings{image: "img", repeats: 5, threshold: "5%"}, "go run ./bench/cmd/bench-aa --image img"))
	if !strings.Contains(md, "Clopper–Pearson, 95 % at n=400") || !strings.Contains(md, "go run ./bench/cmd/bench-aa") {
		t.Errorf("markdown:\n%s", md)
	}
}

// TestReuseReadsFinishedRunsOnly: with --reuse a run folder holding gate.json is read (its exit
// code from its outcome), one without it is refused rather than run into a second gate folder,
// and a missing one is left to run.
func TestReuseReadsFinishedRunsOnly(t *testing.T) {
	out := t.TempDir()
	done := filepath.Join(out, "aa-01", "20261129T000000Z-gate")
	if err := os.MkdirAll(done, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(done, "gate.json"), []byte(`{"outcome":"slower","ratio":0.9}`), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(out, "aa-02", "20261129T000100Z-gate"), 0o755); err != nil {
		t.Fatal(err)
	}
	s := settings{out: out, reuse: true, bin: filepath.Join(out, "no-such-protobench")}
	r, err := s.gateRun(context.Background(), "", 0, io.Discard)
	if err != nil || r.Exit != gate.ExitSlower || r.Result.Ratio != 0.9 {
		t.Errorf("a finished run: %+v, %v; want it read, exit %d, ratio 0.9", r, err, gate.ExitSlower)
	}
	if _, err := s.gateRun(context.Background(), "", 1, io.Discard); err == nil || !strings.Contains(err.Error(), "did not finish") {
		t.Errorf("an unfinished run: %v, want it refused", err)
	}
	if _, err := s.gateRun(context.Background(), "", 2, io.Discard); err == nil || strings.Contains(err.Error(), "did not finish") {
		t.Errorf("a run not yet made: %v, want it run (here: the missing binary's error)", err)
	}
}
