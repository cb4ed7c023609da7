package gate

import (
	"io"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/protobench/protobench/internal/results"
	"github.com/protobench/protobench/internal/scenario"
	"github.com/protobench/protobench/internal/stats"
)

func dockerfile(t *testing.T, body string) string {
	p := filepath.Join(t.TempDir(), "Dockerfile")
	if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestBadInputRefused: each refusal names its flag and what was expected.
func TestBadInputRefused(t *testing.T) {
	grpcFile := dockerfile(t, "FROM debian\nLABEL org.protobench.protocol=grpc\n")
	httpFile := dockerfile(t, "FROM debian\nLABEL a=b org.protobench.protocol=\"http\"\n")
	plainFile := dockerfile(t, "FROM debian\n")
	notDocker := filepath.Join(t.TempDir(), "notes.txt")
	os.WriteFile(notDocker, []byte("hello\n"), 0o644)
	cases := []struct {
		name string
		args []string
		want string
	}{
		{"threshold without %", []string{"--base", grpcFile, "--head", grpcFile, "--fail-if-slower", "5"}, "--fail-if-slower \"5\": want a percentage"},
		{"threshold not a number", []string{"--base", grpcFile, "--head", grpcFile, "--fail-if-slower", "five%"}, "--fail-if-slower \"five%\""},
		{"threshold of 100 %", []string{"--base", grpcFile, "--head", grpcFile, "--fail-if-slower", "100%"}, "above 0 and below 100"},
		{"no threshold", []string{"--base", grpcFile, "--head", grpcFile}, "--fail-if-slower: missing"},
		{"head not a Dockerfile", []string{"--base", grpcFile, "--head", notDocker, "--fail-if-slower", "5%"}, "--head " + notDocker + ": not a Dockerfile"},
		{"head a folder", []string{"--base", grpcFile, "--head", filepath.Dir(notDocker), "--fail-if-slower", "5%"}, "--head " + filepath.Dir(notDocker) + ": a folder"},
		{"base not an image", []string{"--base", "no-such-image-for-the-gate:1", "--head", grpcFile, "--fail-if-slower", "5%"}, "--base \"no-such-image-for-the-gate:1\": neither a Dockerfile nor an image"},
		{"two protocols", []string{"--base", grpcFile, "--head", httpFile, "--fail-if-slower", "5%"}, "--head serves http but --base serves grpc"},
		{"protocol against a label", []string{"--base", grpcFile, "--head", grpcFile, "--protocol", "http", "--fail-if-slower", "5%"}, "--base serves grpc (label org.protobench.protocol), but --protocol is http"},
		{"no protocol anywhere", []string{"--base", plainFile, "--head", plainFile, "--fail-if-slower", "5%"}, "--protocol: missing"},
		{"unknown protocol", []string{"--base", plainFile, "--head", plainFile, "--protocol", "soap", "--fail-if-slower", "5%"}, "--protocol \"soap\""},
		{"one repeat", []string{"--base", grpcFile, "--head", grpcFile, "--repeats", "1", "--fail-if-slower", "5%"}, "--repeats 1"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := Parse(c.args, io.Discard)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("err = %v, want one containing %q", err, c.want)
			}
		})
	}
	s, err := Parse([]string{"--base", grpcFile, "--head", plainFile, "--fail-if-slower", "2.5%", "--head-env", "PROTOBENCH_HANDLER_CPU=2us", "--health-check", "/srv --probe"}, io.Discard)
	if err != nil || s.Protocol != "grpc" || s.Port != 50051 || s.Threshold != 0.025 || s.HeadEnv["PROTOBENCH_HANDLER_CPU"] != "2us" {
		t.Fatalf("settings %+v, err %v", s, err)
	}
	// The scenario the gate runs parses, with head's environment and both builds in one step.
	text := Scenario(s)
	file := filepath.Join(t.TempDir(), "gate.yaml")
	os.WriteFile(file, []byte(text), 0o644)
	sc, err := scenario.Parse(file, []byte(text))
	if err != nil {
		t.Fatalf("the gate's scenario does not parse: %v\n%s", err, text)
	}
	if h := sc.Custom["head"]; h == nil || h.Environment["PROTOBENCH_HANDLER_CPU"] != "2us" || h.Dockerfile != plainFile || strings.Join(h.Health, " ") != "/srv --probe" {
		t.Errorf("head: %+v\n%s", sc.Custom["head"], text)
	}
}

func row(ratio, lo, hi float64, flags ...results.FlagCount) *results.RatioRow {
	return &results.RatioRow{Target: "head", Baseline: "base", Pairs: 5, ThroughputPaired: ratio, Flags: flags, Runs: 10,
		ThroughputPairedCI: stats.Interval{Lo: lo, Hi: hi, OK: true, Method: stats.MethodPairedLog, Coverage: 0.95, N: 5}, P99Paired: math.NaN()}
}

// TestDecide: slower beyond the threshold fails, an interval that rules the threshold out
// passes, anything between and flagged runs are inconclusive (exit 3, never 0).
func TestDecide(t *testing.T) {
	cases := []struct {
		name string
		r    *results.RatioRow
		want string
		code int
	}{
		{"no change, narrow", row(1.0, 0.98, 1.02), Pass, ExitPass},
		{"faster", row(1.2, 1.1, 1.3), Pass, ExitPass},
		{"slower by 3 %, within 5 %", row(0.97, 0.96, 0.98), Pass, ExitPass},
		{"slower by 10 %", row(0.90, 0.88, 0.92), Slower, ExitSlower},
		{"slower by 6 %, interval reaching 0.97", row(0.94, 0.90, 0.97), Slower, ExitSlower},
		{"wide interval", row(0.99, 0.90, 1.08), Inconclusive, ExitInconclusive},
		{"slower beyond 5 %, interval holds 1", row(0.93, 0.85, 1.01), Inconclusive, ExitInconclusive},
		{"client-bound", row(1.0, 0.99, 1.01, results.FlagCount{Flag: "client-bound", Count: 2}), Inconclusive, ExitInconclusive},
		{"busy host, narrow interval", row(1.0, 0.99, 1.01, results.FlagCount{Flag: "busy-host", Count: 2}), Pass, ExitPass},
		{"no ratio", nil, Inconclusive, ExitInconclusive},
	}
	for _, c := range cases {
		res := Decide(c.r, 0.05)
		if res.Outcome != c.want || res.ExitCode() != c.code {
			t.Errorf("%s: %s (exit %d: %s), want %s (exit %d)", c.name, res.Outcome, res.ExitCode(), res.Reason, c.want, c.code)
		}
		md := string(res.Markdown())
		if !strings.HasPrefix(md, "### protobench gate: ") || (res.Outcome == Inconclusive && !strings.Contains(md, "not a pass")) {
			t.Errorf("%s: markdown %q", c.name, md)
		}
		if c.r != nil && !strings.Contains(md, "paired t on logs, 95.0 % at n=5") {
			t.Errorf("%s: markdown lacks the interval's method, coverage and n:\n%s", c.name, md)
		}
	}
}
