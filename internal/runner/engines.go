package runner

import (
	"context"
	"fmt"

	"github.com/protobench/protobench/internal/compose"
	"github.com/protobench/protobench/internal/engine"
	"github.com/protobench/protobench/internal/scenario"
)

// engineChoice is what the runner knows of an --engine name before the engine exists: how to
// make it and its dry run, whether its runs pin this host's cores, and the flags it cannot
// honour. Everything after that the engine says itself (engine.Capabilities).
type engineChoice struct {
	open func(ctx context.Context, opts Options, plan *scenario.Plan, cc *compose.Client, td *teardown, grafana bool) (engine.Engine, error)
	dry  func(engine.DryOptions) engine.Engine
	// hostCores says the engine's containers run on this host's layout cores: the run takes
	// their lock against other projects (takeRunLocks), and the pre-flight check reads this
	// host (preflight). A swarm's cores, power and disk are its nodes'.
	hostCores bool
	// noPublish and noKeepUp, when set, say why the engine refuses --publish and --keep-up.
	noPublish, noKeepUp string
}

// engineChoices are the engines --engine names: the one place that maps a name to an engine.
// parseRunFlagsSet checks the name against it, and runCommand picks the choice from it once.
var engineChoices = map[string]engineChoice{
	EngineCompose: {
		open: func(_ context.Context, opts Options, _ *scenario.Plan, cc *compose.Client, td *teardown, grafana bool) (engine.Engine, error) {
			return engine.NewCompose(engine.ComposeOptions{Client: cc, Docker: opts.Docker, Tracker: td,
				Fast: engine.FastPathEnabled(), Published: opts.Publish, Grafana: grafana}), nil
		},
		dry:       func(o engine.DryOptions) engine.Engine { return engine.NewDryCompose(o) },
		hostCores: true,
	},
	EngineSwarm: {
		open: func(ctx context.Context, opts Options, plan *scenario.Plan, cc *compose.Client, td *teardown, _ bool) (engine.Engine, error) {
			return engine.NewSwarm(ctx, engine.SwarmOptions{Client: cc, Docker: opts.Docker, Project: opts.Project,
				RepoRoot: opts.RepoRoot, Tracker: td, GoServers: goServers(plan), Stdout: opts.Stdout,
				Log: func(format string, args ...any) { fmt.Fprintf(opts.Stderr, "protobench: "+format+"\n", args...) }})
		},
		dry:       func(o engine.DryOptions) engine.Engine { return engine.NewDrySwarm(o) },
		noPublish: "--publish works with --engine compose only: on a swarm the runner reaches Prometheus without a published port",
		noKeepUp:  "--keep-up works with --engine compose only: a swarm run removes its services at the end",
	},
}
