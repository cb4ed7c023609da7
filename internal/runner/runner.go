// Package runner carries out a scenario: it makes sure the images exist, starts the
// observability stack through an engine (package engine), runs every planned step against a
// fresh capped server, has its resource use read (package measure), and writes the results
// folder. It is the `run` subcommand.
package runner

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/protobench/protobench/internal/engine"
	"github.com/protobench/protobench/internal/record"
	"github.com/protobench/protobench/internal/results"
	"github.com/protobench/protobench/internal/scenario"
)

// Engines a run can use (--engine).
const (
	EngineCompose = engine.NameCompose
	EngineSwarm   = engine.NameSwarm
)

// Options are a run's choices, from the command line.
type Options struct {
	Scenario     string // name under ScenariosDir or a path to a YAML file
	ScenariosDir string
	RepoRoot     string
	OutDir       string // parent of the results folder
	Quick        bool
	Repeat       int
	Only         string
	Tools        []string
	Seed         uint64 // shuffles the targets' order within each repeat; 0 draws one (scenario.PlanOptions.Seed)
	KeepUp       bool
	DryRun       bool
	Resume       string // an earlier results folder to continue
	Project      string // compose project name
	Publish      bool   // publish Prometheus and Grafana on 127.0.0.1
	Docker       string // the docker CLI
	Engine       string // EngineCompose (default) or EngineSwarm
	ForceLayout  bool   // keep a layout override on SMT siblings of one core (scenario.PlanOptions)
	Stdout       io.Writer
	Stderr       io.Writer
}

// progress prints "step i/N" lines with elapsed time and an ETA from the plan's estimate,
// corrected by how the run has gone so far.
type progress struct {
	w        io.Writer
	start    time.Time
	total    int
	estimate time.Duration
	done     time.Duration // estimated time of the runs already finished
}

func (p *progress) begin(i int, r scenario.Run) {
	elapsed := time.Since(p.start).Round(time.Second)
	eta := "?"
	if p.done > 0 {
		// Scale the remaining estimate by how far reality has drifted from it so far.
		scale := float64(time.Since(p.start)) / float64(p.done)
		eta = time.Duration(float64(p.estimate-p.done) * scale).Round(time.Second).String()
	} else {
		eta = p.estimate.Round(time.Second).String()
	}
	fmt.Fprintf(p.w, "[%d/%d] %-28s %-11s %-10s r%d   elapsed %s, ETA %s\n",
		i, p.total, r.Step, r.Target, r.Tool, r.Repeat, elapsed, eta)
}

// result prints a finished run's figures under its line, so a user watching sees results as
// they come instead of only at the end.
func (p *progress) result(rec record.Record) {
	fmt.Fprintf(p.w, "        %s\n", results.RunLine(rec))
}

func (p *progress) finish(r scenario.Run) {
	p.done += scenario.StartOverhead + r.Warmup + r.Duration + r.Cooldown
}

// resultsDirName is <UTC timestamp>-<scenario>, so folders sort by time.
func resultsDirName(now time.Time, name string) string {
	return now.UTC().Format("20060102T150405Z") + "-" + name
}

// loadFinished reads the records of an interrupted run and keeps only those that finished
// without error: they are done, and --resume redoes every other run (its failed record is
// replaced, so the folder never holds two records of one run).
func loadFinished(dir string) ([]record.Record, map[string]bool, error) {
	b, err := os.ReadFile(filepath.Join(dir, "results.json"))
	if errors.Is(err, os.ErrNotExist) {
		return nil, map[string]bool{}, nil
	}
	if err != nil {
		return nil, nil, err
	}
	var recs []record.Record
	if err := json.Unmarshal(b, &recs); err != nil {
		return nil, nil, fmt.Errorf("%s: %w", filepath.Join(dir, "results.json"), err)
	}
	done := map[string]bool{}
	var kept []record.Record
	for _, r := range validRecords(recs) {
		key := recordKey(r.Step, r.Target, r.Tool, r.Repeat)
		if done[key] {
			continue
		}
		kept = append(kept, r)
		done[key] = true
	}
	return kept, done, nil
}

func recordKey(step, target, tool string, repeat int) string {
	return strings.Join([]string{step, target, tool, fmt.Sprint(repeat)}, "|")
}

// writeJSON writes v as indented JSON, atomically (a unique temporary file beside it, fsynced,
// renamed into place), so an interrupted run never leaves half a file.
func writeJSON(path string, v any) error {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	return results.WriteFileAtomic(path, append(b, '\n'))
}
