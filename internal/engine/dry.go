package engine

import (
	"context"
	"fmt"
	"io"
	"time"

	"github.com/protobench/protobench/internal/compose"
	"github.com/protobench/protobench/internal/images"
	"github.com/protobench/protobench/internal/record"
)

// DryOptions configure a dry run (`--dry-run`): it prints the commands the engine it plans for
// would run, and starts nothing.
type DryOptions struct {
	Client *compose.Client // made with compose.Options.DryRun
	Docker string
	Out    io.Writer
	// For a swarm (NewDrySwarm): the project, the checkout, the raw folder and the Go servers.
	Project   string
	RepoRoot  string
	RawDir    string
	GoServers map[string]bool
}

// dryStack is what both dry runs share: a stack that moves nothing, measures nothing and leaves
// nothing to tear down, so only the commands of the runs' containers are printed.
type dryStack struct {
	out io.Writer
}

func (d dryStack) printf(format string, args ...any) { fmt.Fprintf(d.out, format, args...) }

func (dryStack) Prepare(context.Context, images.Set, map[string]string) error { return nil }
func (dryStack) Locate(context.Context) (string, string, error)               { return "", "", nil }
func (dryStack) PlaceStack(context.Context, []string, string) error           { return nil }
func (dryStack) Annotate(*record.Record)                                      {}
func (dryStack) Describe(context.Context) Description                         { return Description{} }
func (dryStack) Lost() error                                                  { return nil }
func (dryStack) Down(context.Context) error                                   { return nil }
func (dryStack) ForceRemove(context.Context) error                            { return nil }
func (dryStack) ProjectContainers(context.Context) ([]string, error)          { return nil, nil }

// DryCompose is the dry run of the Compose engine: compose's own commands, as a compose client
// in dry-run mode (compose.Options.DryRun) prints them instead of running them.
type DryCompose struct {
	dryStack
	c *compose.Client // in dry-run mode
}

// NewDryCompose is the dry run of the Compose engine.
func NewDryCompose(o DryOptions) *DryCompose {
	return &DryCompose{dryStack: dryStack{out: o.Out}, c: o.Client}
}

// Capabilities: a dry run moves nothing and measures nothing.
func (d *DryCompose) Capabilities() Capabilities {
	return Capabilities{Name: NameCompose, ClientNodes: 1}
}

// Up prints nothing: compose's `up` of the stack is the same for every scenario, and the dry
// run prints only the first run's commands.
func (d *DryCompose) Up(context.Context, map[string]string, ...string) error { return nil }

func (d *DryCompose) Recreate(ctx context.Context, service string, env map[string]string) error {
	return d.c.Recreate(ctx, service, env)
}

func (d *DryCompose) WaitHealthy(ctx context.Context, service string, timeout time.Duration) error {
	return d.c.WaitHealthy(ctx, service, timeout)
}

func (d *DryCompose) ContainerID(ctx context.Context, service string) (string, error) {
	return d.c.ContainerID(ctx, service)
}

// Run prints the tool's command.
func (d *DryCompose) Run(ctx context.Context, o OneOff) ([]byte, []byte, int, error) {
	if o.Window == nil {
		return d.c.Run(ctx, o.Service, o.Name, o.Entrypoint, o.Env, o.Args)
	}
	stdout, stderr, code, _, _, err := d.c.RunTimed(ctx, o.Service, o.Name, o.Entrypoint, o.Env, o.Args)
	return stdout, stderr, code, err
}

func (d *DryCompose) Remove(ctx context.Context, service string) error {
	return d.c.Remove(ctx, service)
}

func (d *DryCompose) Inspect(ctx context.Context, id string) (ContainerState, error) {
	st, err := d.c.Inspect(ctx, id)
	return ContainerState(st), err
}

func (d *DryCompose) Logs(ctx context.Context, id string) ([]byte, error) {
	return d.c.Logs(ctx, id)
}
