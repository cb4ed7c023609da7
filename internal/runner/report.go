package runner

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"

	"github.com/protobench/protobench/internal/report"
	"github.com/protobench/protobench/internal/results"
	"github.com/protobench/protobench/internal/scenario"
)

// ReportCommand is `protobench report DIR`: it rewrites results.csv and summary.md of a results
// folder from its results.json and scenario.yaml (e.g. after the summary format improved), then
// report.html. report.html is written even when the summary cannot be (an old folder without
// scenario.yaml, say), since the page needs only run.json; the exit code still says the summary
// failed.
func ReportCommand(_ context.Context, args []string, stdout, stderr io.Writer) int {
	dir, ok := folderArg("report", args, stderr)
	if !ok {
		return 2
	}
	code := rewriteSummary(dir, stdout, stderr)
	if _, err := os.Stat(filepath.Join(dir, results.RunFile)); err != nil {
		return code
	}
	if err := report.Write(dir); err != nil {
		fmt.Fprintln(stderr, "protobench report:", err)
		return max(code, 1)
	}
	fmt.Fprintf(stdout, "\nreport: %s\n", filepath.Join(dir, report.File))
	return code
}

// rewriteSummary rewrites results.csv and summary.md from results.json, scenario.yaml and
// run.json, and prints the table.
func rewriteSummary(dir string, stdout, stderr io.Writer) int {
	sc, err := scenario.Load(filepath.Join(dir, "scenario.yaml"))
	if err != nil {
		fmt.Fprintln(stderr, err)
		return 2
	}
	recs, err := results.Load(dir)
	if err != nil {
		fmt.Fprintln(stderr, err)
		return 2
	}
	info, err := readRunInfo(dir)
	if err != nil {
		fmt.Fprintln(stderr, "protobench report:", err)
		return 2
	}
	// The topology the run placed on, so the summary's layout line is the run's; a layout the
	// run kept with --force-layout is kept again.
	quick, cores := info.Quick, runtime.NumCPU()
	if info.Layout.Cores > 0 {
		cores = info.Layout.Cores
	}
	plan, err := sc.Plan(scenario.PlanOptions{Quick: quick, Cores: cores, Topology: info.Layout.Topology, ForceLayout: true})
	if err != nil {
		fmt.Fprintln(stderr, err)
		return 2
	}
	results.ApplyFlags(recs)
	// run.json stays as the run wrote it: the report is made from it, not into it.
	if err := results.WriteAll(dir, nil, plan, recs); err != nil {
		fmt.Fprintln(stderr, "protobench report:", err)
		return 1
	}
	if err := results.Table(stdout, recs, plan); err != nil {
		return 1
	}
	return 0
}
