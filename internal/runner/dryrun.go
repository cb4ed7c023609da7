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
)

// dryRun prints the plan and the exact commands of the first run, without starting anything:
// the run goes through the same compose client (openCompose) and step code (newStepRunner,
// stepRunner.run) as a real one, against the choice's dry-run engine, which prints what the
// engine would do, and a meter that measures nothing.
func dryRun(ctx context.Context, opts Options, plan *scenario.Plan, choice engineChoice) int {
	if err := plan.Print(opts.Stdout); err != nil {
		return 1
	}
	cc, cleanupCustom, code := openCompose(ctx, opts, plan, true)
	if code != 0 {
		return code
	}
	defer cleanupCustom()
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
	eng := choice.dry(engine.DryOptions{Client: cc, Docker: opts.Docker, Out: opts.Stdout,
		Project: opts.Project, RepoRoot: opts.RepoRoot, RawDir: raw, GoServers: goServers(plan)})
	upEnv := map[string]string{"PROTOBENCH_RAW_DIR": raw, "PROTOBENCH_OBS_CPUSET": plan.Layout.ObservabilityCPUSet, "PROTOBENCH_TOOL_USER": toolUser(), compose.ServerUserEnv: serverUser()}
	if err := eng.Up(ctx, upEnv, observabilityServices...); err != nil {
		fmt.Fprintln(opts.Stderr, "protobench:", err)
		return 1
	}
	first := plan.Runs[0]
	fmt.Fprintf(opts.Stdout, "\ncommands for the first run (%s):\n", first.ID)
	// The run ID "dry-run" labels the containers as a run labels its own, so the commands carry
	// the step's labels.
	sr := newStepRunner(opts, plan, stepSetup{eng: eng, m: &measure.Measurer{Meter: measure.None{}, Log: func(string, ...any) {}},
		runID: "dry-run", resultDir: tmp})
	sr.run(ctx, plan, first)
	return 0
}
