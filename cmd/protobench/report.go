package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/protobench/protobench/internal/report"
	"github.com/protobench/protobench/internal/results"
	"github.com/protobench/protobench/internal/runner"
)

// reportCommand is `protobench report DIR`: the runner rewrites summary.md and results.csv from
// results.json, then report.html is written from the same folder. report.html is written even
// when the summary cannot be (an old folder without scenario.yaml, say), since the page needs
// only run.json; the exit code still says the summary failed.
func reportCommand(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	code := runner.ReportCommand(ctx, args, stdout, stderr)
	if len(args) != 1 {
		return code
	}
	dir := args[0]
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
