package main

import (
	"context"
	"fmt"
	"io"
	"path/filepath"

	"github.com/protobench/protobench/internal/report"
	"github.com/protobench/protobench/internal/runner"
)

// reportCommand is `protobench report DIR`: the runner rewrites summary.md and results.csv from
// results.json, then report.html is written from the same folder.
func reportCommand(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	if code := runner.ReportCommand(ctx, args, stdout, stderr); code != 0 {
		return code
	}
	dir := args[len(args)-1]
	if err := report.Write(dir); err != nil {
		fmt.Fprintln(stderr, "protobench report:", err)
		return 1
	}
	fmt.Fprintf(stdout, "\nreport: %s\n", filepath.Join(dir, report.File))
	return 0
}
