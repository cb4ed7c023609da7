package runner

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"github.com/protobench/protobench/internal/repo"
	"io"
	"os"
	"path/filepath"
	"runtime"

	"github.com/protobench/protobench/internal/compose"
	"github.com/protobench/protobench/internal/results"
	"github.com/protobench/protobench/internal/scenario"
)

// DownCommand is `protobench down`: it stops whatever a --keep-up run left running.
func DownCommand(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("down", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var project, docker string
	addStackFlags(fs, &project, &docker)
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if err := checkProjectName(project); err != nil {
		fmt.Fprintln(stderr, "protobench down:", err)
		return 2
	}
	root, err := repo.Root()
	if err != nil {
		fmt.Fprintln(stderr, "protobench:", err)
		return 2
	}
	cc, err := compose.New(ctx, compose.Options{Dir: filepath.Join(root, "compose"), Log: stderr, ProjectName: project, Docker: docker})
	if err != nil {
		fmt.Fprintln(stderr, "protobench:", err)
		return 2
	}
	if err := cc.Down(ctx); err != nil {
		fmt.Fprintln(stderr, "protobench down:", err)
		return 1
	}
	fmt.Fprintf(stdout, "protobench: stack %s stopped\n", project)
	return 0
}

// ReportCommand is `protobench report DIR`: it rewrites results.csv and summary.md of a results
// folder from its results.json and scenario.yaml, e.g. after the summary format improved.
func ReportCommand(_ context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("report", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() { fmt.Fprintln(stderr, "usage: protobench report <results folder>") }
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if fs.NArg() != 1 {
		fs.Usage()
		return 2
	}
	dir := fs.Arg(0)
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
	var info map[string]any
	b, err := os.ReadFile(filepath.Join(dir, "run.json"))
	if err == nil {
		err = json.Unmarshal(b, &info)
	}
	if err != nil {
		fmt.Fprintf(stderr, "protobench report: %s: %v\n", filepath.Join(dir, "run.json"), err)
		return 2
	}
	quick, _ := info["quick"].(bool)
	cores := runtime.NumCPU()
	if layout, ok := info["cpu_layout"].(map[string]any); ok {
		if c, ok := layout["Cores"].(float64); ok && c > 0 {
			cores = int(c)
		}
	}
	plan, err := sc.Plan(scenario.PlanOptions{Quick: quick, Cores: cores})
	if err != nil {
		fmt.Fprintln(stderr, err)
		return 2
	}
	results.ApplyFlags(recs)
	if err := results.WriteAll(dir, info, plan, recs); err != nil {
		fmt.Fprintln(stderr, "protobench report:", err)
		return 1
	}
	if err := results.Table(stdout, recs, plan); err != nil {
		return 1
	}
	return 0
}
