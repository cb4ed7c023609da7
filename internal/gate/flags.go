package gate

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/protobench/protobench/internal/targets"
)

var errUsage = errors.New("usage")

type envFlag map[string]string

func (e envFlag) String() string { return fmt.Sprint(map[string]string(e)) }
func (e envFlag) Set(v string) error {
	k, val, ok := strings.Cut(v, "=")
	if !ok || k == "" {
		return fmt.Errorf("want NAME=value, got %q", v)
	}
	e[k] = val
	return nil
}

// Parse reads and checks the gate's flags; every refusal names its flag.
func Parse(args []string, stderr io.Writer) (Settings, error) {
	s := Settings{HeadEnv: map[string]string{}}
	fs := flag.NewFlagSet("gate", flag.ContinueOnError)
	fs.SetOutput(stderr)
	base := fs.String("base", "", "the base build: an image (myserver:main) or a Dockerfile")
	head := fs.String("head", "", "the head build: an image (myserver:pr-123) or a Dockerfile")
	threshold := fs.String("fail-if-slower", "", "fail when head's throughput is lower by more than this percentage, e.g. 5%")
	fs.StringVar(&s.Protocol, "protocol", "", "the protocol both builds serve (default: their "+ProtocolLabel+" label)")
	fs.IntVar(&s.Port, "port", 0, "the port both builds listen on (default: the registry's port of the protocol)")
	fs.StringVar(&s.Method, "method", "GetUser", "the contract method to drive")
	fs.IntVar(&s.Repeats, "repeats", 5, "repeats; each runs base and head once, in shuffled order")
	fs.DurationVar(&s.Warmup, "warmup", 3e9, "warm-up of each run")
	fs.DurationVar(&s.Duration, "duration", 10e9, "measured time of each run")
	fs.IntVar(&s.Connections, "connections", 4, "connections of our generator")
	fs.IntVar(&s.Conc, "concurrency", 16, "requests in flight per connection")
	fs.Var(envFlag(s.HeadEnv), "head-env", "NAME=value for head's container only (calibration: PROTOBENCH_HANDLER_CPU=2us); repeatable")
	fs.StringVar(&s.Out, "out", "results/gate", "where the gate's scenario and results folders go")
	fs.StringVar(&s.MarkdownPath, "markdown", "", "also write the Markdown summary (a PR comment) to this file")
	fs.Uint64Var(&s.Seed, "seed", 0, "seed of the order within each repeat (default: a new one)")
	fs.StringVar(&s.Docker, "docker", "docker", "the docker CLI")
	health := fs.String("health-check", "", "the command, run in each build's container, that exits 0 once it serves (space-separated); default: none")
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: protobench gate --base IMAGE|Dockerfile --head IMAGE|Dockerfile --fail-if-slower 5% [flags]\nexit 0 no slowdown beyond the threshold; 1 slower; 3 inconclusive (not a pass); 2 bad input; 4 the run failed")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return s, errUsage
	}
	if fs.NArg() > 0 {
		return s, fmt.Errorf("unexpected argument %q: every setting is a --flag", fs.Arg(0))
	}
	s.Health = strings.Fields(*health)
	var err error
	if *threshold == "" {
		return s, fmt.Errorf("--fail-if-slower: missing; give the slowdown that fails the gate, e.g. --fail-if-slower 5%%")
	}
	if s.Threshold, err = parseThreshold(*threshold); err != nil {
		return s, err
	}
	if s.Protocol != "" && !slices.Contains(targets.Protocols, s.Protocol) {
		return s, fmt.Errorf("--protocol %q: want one of %s", s.Protocol, strings.Join(targets.Protocols, ", "))
	}
	if s.Repeats < 2 {
		return s, fmt.Errorf("--repeats %d: a paired interval needs at least 2", s.Repeats)
	}
	if s.Base, err = ResolveBuild("--base", *base, s.Docker); err != nil {
		return s, err
	}
	if s.Head, err = ResolveBuild("--head", *head, s.Docker); err != nil {
		return s, err
	}
	if s.Protocol, err = Protocol(s.Protocol, s.Base, s.Head); err != nil {
		return s, err
	}
	if s.Port == 0 {
		s.Port = defaultPort(s.Protocol)
	}
	if s.Port <= 0 || s.Port > 65535 {
		return s, fmt.Errorf("--port %d: want 1 to 65535", s.Port)
	}
	return s, nil
}
