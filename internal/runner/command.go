package runner

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"github.com/protobench/protobench/internal/repo"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"strings"

	"github.com/protobench/protobench/internal/compose"
	"github.com/protobench/protobench/internal/scenario"
	"github.com/protobench/protobench/internal/tool"
)

// splitScenarioArg lets the scenario name come before or after the flags, since
// `./run.sh grpc-vs-rest --quick` is the natural way to type it.
func splitScenarioArg(args []string) (string, []string) {
	if len(args) > 0 && !strings.HasPrefix(args[0], "-") {
		return args[0], args[1:]
	}
	return "", args
}

// parseRunFlags reads the `run` command line into Options.
func parseRunFlags(args []string, stderr io.Writer) (Options, error) {
	o, _, err := parseRunFlagsSet(args, stderr)
	return o, err
}

// parseRunFlagsSet is parseRunFlags that also says which flags the command line set, so a
// resume can tell an inherited choice from a contradicting one.
func parseRunFlagsSet(args []string, stderr io.Writer) (Options, map[string]bool, error) {
	var o Options
	given := map[string]bool{}
	name, rest := splitScenarioArg(args)
	fs := flag.NewFlagSet("run", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: protobench run <scenario name | path/to/scenario.yaml> [flags]")
		fs.PrintDefaults()
	}
	fs.BoolVar(&o.Quick, "quick", false, "every run at most 7 s with its warm-up, and one repeat")
	fs.IntVar(&o.Repeat, "repeat", 0, "repeats per step (overrides the scenario)")
	fs.StringVar(&o.Only, "only", "", "run only steps whose name matches (comma-separated globs or substrings)")
	fs.Uint64Var(&o.Seed, "seed", 0, "seed of the order of targets and tools within each repeat (default: a new one per run, kept in run.json)")
	tools := fs.String("tools", "", "comma-separated tools to run ("+strings.Join(tool.Names(), ", ")+")")
	fs.StringVar(&o.OutDir, "out", "", "parent folder of the results folder (default: results/ in the checkout)")
	fs.BoolVar(&o.KeepUp, "keep-up", false, "leave Prometheus and Grafana running afterwards")
	fs.BoolVar(&o.DryRun, "dry-run", false, "print the plan and the commands; start nothing")
	fs.StringVar(&o.Resume, "resume", "", "results folder of an interrupted run to continue")
	fs.BoolVar(&o.ForceLayout, "force-layout", false, "keep the scenario's layout cpusets even where they put server and client on SMT siblings of one physical core (every record is then flagged smt-shared)")
	addStackFlags(fs, &o.Project, &o.Docker)
	fs.StringVar(&o.Engine, "engine", EngineCompose, "what runs the containers: compose (this machine) or swarm (the Docker Swarm the docker CLI points at; nodes labelled protobench.role=server|client|monitor)")
	fs.BoolVar(&o.Publish, "publish", os.Getenv("PROTOBENCH_PROMETHEUS_PORT") != "" || os.Getenv("PROTOBENCH_GRAFANA_PORT") != "",
		"publish Prometheus and Grafana on 127.0.0.1 (ports PROTOBENCH_PROMETHEUS_PORT, default 9090, and PROTOBENCH_GRAFANA_PORT, default 3000; setting either implies --publish)")
	if err := fs.Parse(rest); err != nil {
		return o, nil, err
	}
	if name == "" && fs.NArg() > 0 {
		name = fs.Arg(0)
		if err := fs.Parse(fs.Args()[1:]); err != nil {
			return o, nil, err
		}
	}
	if fs.NArg() > 0 {
		return o, nil, fmt.Errorf("unexpected argument %q", fs.Arg(0))
	}
	if name == "" && o.Resume == "" {
		return o, nil, errors.New("name a scenario (see 'protobench list') or a scenario file")
	}
	if err := checkProjectName(o.Project); err != nil {
		return o, nil, err
	}
	choice, ok := engineChoices[o.Engine]
	switch {
	case !ok:
		return o, nil, fmt.Errorf("--engine %q: want compose or swarm", o.Engine)
	case o.Publish && choice.noPublish != "":
		return o, nil, errors.New(choice.noPublish)
	case o.KeepUp && choice.noKeepUp != "":
		return o, nil, errors.New(choice.noKeepUp)
	}
	fs.Visit(func(f *flag.Flag) { given[f.Name] = true })
	o.Scenario = name
	if *tools != "" {
		o.Tools = strings.Split(*tools, ",")
	}
	return o, given, nil
}

// addStackFlags adds the flags that pick the compose project and the docker CLI, shared by run
// and down.
func addStackFlags(fs *flag.FlagSet, project, docker *string) {
	defProject := os.Getenv("PROTOBENCH_PROJECT")
	if defProject == "" {
		defProject = compose.DefaultProjectName
	}
	fs.StringVar(project, "project", defProject, "compose project name (env PROTOBENCH_PROJECT): stacks of different projects run side by side")
	defDocker := os.Getenv("PROTOBENCH_DOCKER")
	if defDocker == "" {
		defDocker = "docker"
	}
	fs.StringVar(docker, "docker", defDocker, "the docker CLI to use (env PROTOBENCH_DOCKER)")
}

// checkProjectName accepts what compose v1 and v2 both accept as a project name.
func checkProjectName(p string) error {
	if p == "" {
		return errors.New("--project: empty project name")
	}
	for i, r := range p {
		ok := r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || i > 0 && (r == '-' || r == '_')
		if !ok {
			return fmt.Errorf("--project %q: want lowercase letters, digits, '-' and '_', starting with a letter or digit", p)
		}
	}
	return nil
}

// ListCommand is `protobench list`: every scenario with its description and estimated time.
func ListCommand(_ context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("list", flag.ContinueOnError)
	fs.SetOutput(stderr)
	if err := fs.Parse(args); err != nil {
		return 2
	}
	root, err := repo.Root()
	if err != nil {
		fmt.Fprintln(stderr, "protobench:", err)
		return 2
	}
	entries, err := scenario.List(filepath.Join(root, "scenarios"), runtime.NumCPU())
	if err != nil {
		fmt.Fprintln(stderr, "protobench:", err)
		return 1
	}
	if err := scenario.PrintList(stdout, entries); err != nil {
		return 1
	}
	return 0
}
