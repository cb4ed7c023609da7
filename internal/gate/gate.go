// Package gate is `protobench gate`: a regression gate for CI. It runs two builds of one server
// (base and head) as two targets of one step, interleaved in a shuffled order within each
// repeat, reads the paired throughput ratio head/base with its interval, and exits 0 when no
// slowdown beyond the threshold fits the runs, 1 when head is slower beyond it, and 3 when the
// runs cannot tell (never a pass). It writes a Markdown summary fit for a pull-request comment.
package gate

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/protobench/protobench/internal/compare"
	"github.com/protobench/protobench/internal/report"
	"github.com/protobench/protobench/internal/results"
	"github.com/protobench/protobench/internal/targets"
)

// Settings are the gate's flags after checking.
type Settings struct {
	Base, Head        Build
	Protocol          string
	Port              int
	Threshold         float64
	Method            string
	Repeats           int
	Warmup, Duration  time.Duration
	Connections, Conc int
	HeadEnv           map[string]string
	Out, MarkdownPath string
	Seed              uint64
	Docker            string
	Health            []string // health_check of both builds; nil for none
}

// Run is the function that runs a scenario: runner.Command in the protobench binary (the gate
// package cannot import the runner, which imports every tool).
type Run func(ctx context.Context, args []string, stdout, stderr io.Writer) int

// Command is `protobench gate --base IMAGE|Dockerfile --head IMAGE|Dockerfile --fail-if-slower 5%`.
func Command(run Run) func(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	return func(ctx context.Context, args []string, stdout, stderr io.Writer) int {
		s, err := Parse(args, stderr)
		if err != nil {
			if err != errUsage {
				fmt.Fprintln(stderr, "protobench gate:", err)
			}
			return ExitUsage
		}
		res, err := Execute(ctx, s, run, stderr)
		if err != nil {
			fmt.Fprintln(stderr, "protobench gate:", err)
			return ExitRunFailed
		}
		md := res.Markdown()
		stdout.Write(md)
		if s.MarkdownPath != "" {
			if err := results.WriteFileAtomic(s.MarkdownPath, md); err != nil {
				fmt.Fprintln(stderr, "protobench gate:", err)
			}
		}
		return res.ExitCode()
	}
}

// Execute writes the gate's scenario, runs it, and decides.
func Execute(ctx context.Context, s Settings, run Run, log io.Writer) (Result, error) {
	if err := os.MkdirAll(s.Out, 0o755); err != nil {
		return Result{}, err
	}
	file := filepath.Join(s.Out, "gate.yaml")
	if err := os.WriteFile(file, []byte(Scenario(s)), 0o644); err != nil {
		return Result{}, err
	}
	args := []string{"run", file, "--out", s.Out}
	if s.Seed != 0 {
		args = append(args, "--seed", fmt.Sprint(s.Seed))
	}
	before := folders(s.Out)
	if code := run(ctx, args[1:], log, log); code != 0 {
		return Result{}, fmt.Errorf("protobench %s exited %d", strings.Join(args, " "), code)
	}
	dir := ""
	for d := range folders(s.Out) {
		if !before[d] {
			dir = d
		}
	}
	if dir == "" {
		return Result{}, fmt.Errorf("the run left no results folder under %s", s.Out)
	}
	f, err := report.Load(dir)
	if err != nil {
		return Result{}, err
	}
	var row *results.RatioRow
	for i := range f.Summary.Ratios {
		if r := &f.Summary.Ratios[i]; r.Target == "head" && r.Baseline == "base" && r.Tool == results.PrimaryTool {
			row = r
		}
	}
	res := Decide(row, s.Threshold)
	res.Folder, res.Command = dir, "protobench "+strings.Join(args, " ")
	res.BaseRPS, res.HeadRPS = targetRPS(f, "base"), targetRPS(f, "head")
	if err := results.WriteFileAtomic(filepath.Join(dir, "gate.json"), res.JSON()); err != nil {
		return res, err
	}
	return res, nil
}

func targetRPS(f *report.Folder, target string) float64 {
	var xs []float64
	for _, r := range f.Records {
		if r.Target == target && r.Valid() && r.ThroughputRPS > 0 {
			xs = append(xs, r.ThroughputRPS)
		}
	}
	return geo(xs)
}

// folders lists the results folders of gate runs under out.
func folders(out string) map[string]bool {
	m := map[string]bool{}
	ds, _ := filepath.Glob(filepath.Join(out, "*-gate"))
	sort.Strings(ds)
	for _, d := range ds {
		m[d] = true
	}
	return m
}

// Scenario is the gate's scenario: base and head as custom targets of one step, base the
// baseline, our generator in the closed model.
func Scenario(s Settings) string {
	var b strings.Builder
	b.WriteString("name: gate\ndescription: protobench gate, head against base, interleaved in one step\ncustom_targets:\n")
	for _, side := range []struct {
		name string
		b    Build
		env  map[string]string
	}{{"base", s.Base, nil}, {"head", s.Head, s.HeadEnv}} {
		k, v := side.b.Key()
		fmt.Fprintf(&b, "  %s:\n    %s: %q\n    protocol: %s\n    port: %d\n", side.name, k, v, s.Protocol, s.Port)
		if len(s.Health) > 0 {
			fmt.Fprintf(&b, "    health_check: [")
			for i, h := range s.Health {
				if i > 0 {
					b.WriteString(", ")
				}
				fmt.Fprintf(&b, "%q", h)
			}
			b.WriteString("]\n")
		}
		if len(side.env) > 0 {
			b.WriteString("    environment:\n")
			keys := make([]string, 0, len(side.env))
			for k := range side.env {
				keys = append(keys, k)
			}
			sort.Strings(keys)
			for _, k := range keys {
				fmt.Fprintf(&b, "      %s: %q\n", k, side.env[k])
			}
		}
	}
	fmt.Fprintf(&b, "defaults:\n  warmup: %s\n  duration: %s\n  repeats: %d\n  cooldown: 1s\n", s.Warmup, s.Duration, s.Repeats)
	fmt.Fprintf(&b, "steps:\n  - name: gate\n    targets: [base, head]\n    baseline: base\n    method: %s\n    tools: [protobench]\n    connections: %d\n    concurrency: %d\n",
		s.Method, s.Connections, s.Conc)
	return b.String()
}

// defaultPort is the registry's port of the first target of protocol.
func defaultPort(protocol string) int {
	for _, t := range targets.All() {
		if t.Protocol == protocol {
			return t.Port
		}
	}
	return 0
}

// parseThreshold reads --fail-if-slower: a percentage above 0 and below 100.
func parseThreshold(v string) (float64, error) {
	if !strings.HasSuffix(strings.TrimSpace(v), "%") {
		return 0, fmt.Errorf("--fail-if-slower %q: want a percentage such as 5%%", v)
	}
	p, err := compare.ParsePercent(v)
	if err != nil || !(p > 0 && p < 100) {
		return 0, fmt.Errorf("--fail-if-slower %q: want a percentage above 0 and below 100, such as 5%%", v)
	}
	return p / 100, nil
}
