package runner

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"github.com/protobench/protobench/internal/compose"
	"github.com/protobench/protobench/internal/engine"
	"github.com/protobench/protobench/internal/measure"
	"github.com/protobench/protobench/internal/scenario"
	"github.com/protobench/protobench/internal/stepinfo"
)

// dryRun prints the plan and the exact commands of the first run, without starting anything
// (parseRunFlags has checked the engine's name):
// the run goes through the same step code as a real one, against the dry-run engine, which
// prints what the engine --engine names would do, and a meter that measures nothing.
func dryRun(ctx context.Context, opts Options, plan *scenario.Plan) int {
	if err := plan.Print(opts.Stdout); err != nil {
		return 1
	}
	copts := composeOptions(opts, true, opts.Stdout)
	customFile, cleanupCustom, err := prepareCustom(ctx, opts.RepoRoot, plan, opts.Stdout, true)
	if err != nil {
		fmt.Fprintln(opts.Stderr, "protobench:", err)
		return 2
	}
	defer cleanupCustom()
	if customFile != "" {
		copts.Extra = []string{customFile}
	}
	cc, err := compose.New(ctx, copts)
	if err != nil {
		fmt.Fprintln(opts.Stderr, "protobench:", err)
		return 2
	}
	if len(plan.Runs) == 0 {
		return 0
	}
	tmp, err := os.MkdirTemp("", "protobench-dry-run-")
	if err != nil {
		return 1
	}
	defer os.RemoveAll(tmp)
	raw := filepath.Join(tmp, "raw")
	if err := os.MkdirAll(raw, 0o755); err != nil {
		return 1
	}
	eng := engineChoices[opts.Engine].dry(engine.DryOptions{Client: cc, Docker: opts.Docker, Out: opts.Stdout,
		Project: opts.Project, RepoRoot: opts.RepoRoot, RawDir: raw, GoServers: goServers(plan)})
	upEnv := map[string]string{"PROTOBENCH_RAW_DIR": raw, "PROTOBENCH_OBS_CPUSET": plan.Layout.ObservabilityCPUSet, "PROTOBENCH_TOOL_USER": toolUser()}
	if err := eng.Up(ctx, upEnv, observabilityServices...); err != nil {
		fmt.Fprintln(opts.Stderr, "protobench:", err)
		return 1
	}
	first := plan.Runs[0]
	fmt.Fprintf(opts.Stdout, "\ncommands for the first run (%s):\n", first.ID)
	// Labelled as a run labels its containers, so the commands carry the step's labels.
	step := stepinfo.Step{RunID: "dry-run", Scenario: plan.Scenario.Name, Step: first.Step, Repeat: first.Repeat, Target: first.Target, Tool: first.Tool}
	nolog := func(string, ...any) {}
	sr := &stepRunner{eng: eng, m: &measure.Measurer{Meter: measure.None{}, Log: nolog}, scenario: plan.Scenario.Name, runID: "dry-run",
		resultDir: tmp, rawMount: "/raw", project: opts.Project, log: nolog, labels: step.ComposeEnv()}
	sr.run(ctx, plan, first)
	return 0
}
