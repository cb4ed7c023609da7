package runner

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"time"

	"github.com/protobench/protobench/internal/record"
	"github.com/protobench/protobench/internal/results"
	"github.com/protobench/protobench/internal/scenario"
)

// PlanFlags are the command-line choices that change a plan. run.json keeps them, so a resume
// can refuse to mix runs of two different plans in one folder.
type PlanFlags struct {
	Quick  bool     `json:"quick"`
	Repeat int      `json:"repeat,omitempty"`
	Only   string   `json:"only,omitempty"`
	Tools  []string `json:"tools,omitempty"`
	// Seed shuffled the runs within each repeat; a resume replays it so that the remaining runs
	// keep their order. 0 (older folders) kept the scenario's order.
	Seed uint64 `json:"seed,omitempty"`
	// ForceLayout kept a layout override on SMT siblings (--force-layout); a resume keeps it.
	ForceLayout bool `json:"force_layout,omitempty"`
}

// Resume is one continuation of a run, appended to run.json's resumes.
type Resume struct {
	Started  time.Time  `json:"started"`
	Finished *time.Time `json:"finished,omitempty"`
	Command  []string   `json:"command"`
	Done     int        `json:"runs_done_before"`
}

// errResumeMismatch is wrapped by every refusal to resume: the CLI exits 2 on it.
var errResumeMismatch = errors.New("resume mismatch")

// readRunInfo reads run.json of a results folder.
func readRunInfo(dir string) (RunInfo, error) {
	var info RunInfo
	path := filepath.Join(dir, results.RunFile)
	b, err := os.ReadFile(path)
	if err != nil {
		return info, err
	}
	if err := json.Unmarshal(b, &info); err != nil {
		return info, fmt.Errorf("%s: %w", path, err)
	}
	return info, nil
}

// checkResume compares what a resume would run with what the folder holds, and fills the plan
// flags the command line left unset from run.json. A scenario whose bytes differ, or a flag set
// to another value, is refused: the folder would otherwise hold runs of two different plans.
func checkResume(opts *Options, given map[string]bool, sc *scenario.Scenario, prev RunInfo) error {
	var diffs []string
	if prev.ScenarioSHA256 != "" && sc.Hash() != prev.ScenarioSHA256 {
		diffs = append(diffs, fmt.Sprintf("scenario %s has sha256 %.12s, the folder's run used %.12s (%s)",
			sc.Path, sc.Hash(), prev.ScenarioSHA256, prev.ScenarioFile))
	}
	pf := prev.PlanFlags
	if pf == nil {
		// A folder from before plan flags were kept: only --quick was recorded.
		pf = &PlanFlags{Quick: prev.Quick}
	}
	check := func(name string, now, before any, inherit func()) {
		if !given[name] {
			inherit()
			return
		}
		if fmt.Sprint(now) != fmt.Sprint(before) {
			diffs = append(diffs, fmt.Sprintf("--%s is %v now, the folder's run used %v", name, now, before))
		}
	}
	check("quick", opts.Quick, pf.Quick, func() { opts.Quick = pf.Quick })
	check("repeat", opts.Repeat, pf.Repeat, func() { opts.Repeat = pf.Repeat })
	check("only", opts.Only, pf.Only, func() { opts.Only = pf.Only })
	check("tools", strings.Join(opts.Tools, ","), strings.Join(pf.Tools, ","), func() { opts.Tools = slices.Clone(pf.Tools) })
	check("seed", opts.Seed, pf.Seed, func() { opts.Seed = pf.Seed })
	check("force-layout", opts.ForceLayout, pf.ForceLayout, func() { opts.ForceLayout = pf.ForceLayout })
	if len(diffs) > 0 {
		return fmt.Errorf("%w: cannot resume %s: %s", errResumeMismatch, opts.Resume, strings.Join(diffs, "; "))
	}
	return nil
}

// folderArg parses the command line of a command that takes one results folder and nothing
// else; ok is false once usage has been printed.
func folderArg(command string, args []string, stderr io.Writer) (string, bool) {
	fs := flag.NewFlagSet(command, flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() { fmt.Fprintf(stderr, "usage: protobench %s <results folder>\n", command) }
	if err := fs.Parse(args); err != nil {
		return "", false
	}
	if fs.NArg() != 1 {
		fs.Usage()
		return "", false
	}
	return fs.Arg(0), true
}

// StatusCommand is `protobench status DIR`: how many runs of a results folder are done, which
// remain, and the command that finishes it.
func StatusCommand(_ context.Context, args []string, stdout, stderr io.Writer) int {
	dir, ok := folderArg("status", args, stderr)
	if !ok {
		return 2
	}
	info, err := readRunInfo(dir)
	if err != nil {
		fmt.Fprintln(stderr, "protobench status:", err)
		return 2
	}
	sc, err := scenario.Load(filepath.Join(dir, results.ScenarioFile))
	if err != nil {
		fmt.Fprintln(stderr, "protobench status:", err)
		return 2
	}
	pf := PlanFlags{Quick: info.Quick}
	if info.PlanFlags != nil {
		pf = *info.PlanFlags
	}
	cores := info.Layout.Cores
	if cores <= 0 {
		cores = runtime.NumCPU()
	}
	plan, err := sc.Plan(scenario.PlanOptions{Quick: pf.Quick, Repeat: pf.Repeat, Only: pf.Only, Tools: pf.Tools, Cores: cores, Seed: pf.Seed})
	if err != nil {
		fmt.Fprintf(stderr, "protobench status: %s: %v\n", sc.Path, err)
		return 2
	}
	_, done, err := loadFinished(dir)
	if err != nil {
		fmt.Fprintln(stderr, "protobench status:", err)
		return 2
	}
	failed := map[string]string{}
	if recs, err := results.Load(dir); err == nil {
		for _, r := range recs {
			if !r.Valid() {
				failed[recordKey(r.Step, r.Target, r.Tool, r.Repeat)] = r.Error
			}
		}
	}
	var remaining []scenario.Run
	var left time.Duration
	for _, r := range plan.Runs {
		if !done[recordKey(r.Step, r.Target, r.Tool, r.Repeat)] {
			remaining = append(remaining, r)
			left += scenario.StartOverhead + r.Warmup + r.Duration + r.Cooldown
		}
	}
	fmt.Fprintf(stdout, "%s: scenario %s, %d of %d runs done, %d remaining (about %s)\n",
		dir, sc.Name, len(plan.Runs)-len(remaining), len(plan.Runs), len(remaining), left.Round(time.Second))
	for _, r := range remaining {
		why := "not run yet"
		if e, ok := failed[recordKey(r.Step, r.Target, r.Tool, r.Repeat)]; ok {
			why = "failed: " + firstLineOf(e)
		}
		fmt.Fprintf(stdout, "  %-28s %-11s %-10s r%d  %s\n", r.Step, r.Target, r.Tool, r.Repeat, why)
	}
	if len(remaining) > 0 {
		fmt.Fprintf(stdout, "finish it with: ./run.sh run --resume %s\n", dir)
	} else {
		fmt.Fprintln(stdout, "complete")
	}
	return 0
}

// validRecords keeps the records that count as done.
func validRecords(recs []record.Record) []record.Record {
	var out []record.Record
	for _, r := range recs {
		if r.Valid() {
			out = append(out, r)
		}
	}
	return out
}
