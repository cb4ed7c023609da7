package engine

import (
	"context"
	"fmt"
	"io"
	"time"

	"github.com/protobench/protobench/internal/compose"
	"github.com/protobench/protobench/internal/images"
	"github.com/protobench/protobench/internal/record"
	"github.com/protobench/protobench/internal/swarm"
)

// Dry is `--dry-run`: it prints the commands the engine it plans for would run, and starts
// nothing. For compose they come from a compose client in dry-run mode (compose.Options.DryRun),
// which prints each command instead of running it. For a swarm they are built by the swarm
// engine's own code from the compose services as `compose config` renders them (read-only),
// planned for a single node, the placement of a swarm without role labels; with labelled nodes
// each service also carries its role's constraint.
type Dry struct {
	c   *compose.Client // in dry-run mode
	out io.Writer
	// swarm builds the services a swarm run would create; nil when the dry run plans for compose.
	swarm *Swarm
}

// DryOptions configure the dry run.
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

// NewDryCompose is the dry run of the Compose engine: compose's own commands, as its dry-run
// client prints them.
func NewDryCompose(o DryOptions) *Dry { return &Dry{c: o.Client, out: o.Out} }

// NewDrySwarm is the dry run of the Swarm engine, planned for a single node.
func NewDrySwarm(o DryOptions) *Dry {
	sw := &swarm.Client{Docker: o.Docker, Project: o.Project}
	return &Dry{c: o.Client, out: o.Out, swarm: &Swarm{c: o.Client, calls: &calls{docker: o.Docker}, sw: sw, place: placement{single: true},
		repoRoot: o.RepoRoot, rawDir: o.RawDir, goServers: o.GoServers, project: o.Project,
		log: func(string, ...any) {}, servers: map[string]*swarmServer{}, owners: map[string]string{}}}
}

func (d *Dry) printf(format string, args ...any) { fmt.Fprintf(d.out, format, args...) }

// Capabilities: a dry run moves nothing and measures nothing.
func (d *Dry) Capabilities() Capabilities {
	name := NameCompose
	if d.swarm != nil {
		name = NameSwarm
	}
	return Capabilities{Name: name, ClientNodes: 1}
}

func (d *Dry) Prepare(context.Context, images.Set, map[string]string) error { return nil }

// Up prints a swarm's network and observability services. Compose's `up` of the stack is the
// same for every scenario, and the dry run prints only the first run's commands.
func (d *Dry) Up(ctx context.Context, env map[string]string, services ...string) error {
	if d.swarm == nil {
		return nil
	}
	s := d.swarm
	d.printf("\nswarm commands of the observability stack (planned for a single node without role labels):\n")
	s.calls.base = s.calls.with(env)
	d.printf("+ %s\n", s.sw.CreateNetworkLine(ctx))
	for _, svc := range services {
		if svc == "grafana" {
			d.printf("# grafana is not started on a swarm: import dashboards/*.json into a Grafana of your own\n")
			continue
		}
		spec, err := s.observabilityService(ctx, svc, func(cfg []byte) (string, error) {
			line, name := s.sw.CreateConfigLine("prometheus")
			d.printf("# Prometheus' configuration (%d bytes, internal/swarm/promconfig) on stdin; a run gives the config a unique suffix\n+ %s\n", len(cfg), line)
			return name, nil
		})
		if err != nil {
			return fmt.Errorf("%s: %w", svc, err)
		}
		d.printf("+ %s\n", s.sw.CreateServiceLine(spec))
	}
	d.printf("# wait until every service above has a running task\n")
	return nil
}

func (d *Dry) Locate(context.Context) (string, string, error) { return "", "", nil }

func (d *Dry) Recreate(ctx context.Context, service string, env map[string]string) error {
	if d.swarm == nil {
		return d.c.Recreate(ctx, service, env)
	}
	s := d.swarm
	cs, spec, err := s.serverService(ctx, service, s.calls.with(env))
	if err != nil {
		return err
	}
	s.servers[service] = &swarmServer{name: spec.Name, spec: cs}
	d.printf("+ %s\n", s.sw.CreateServiceLine(spec))
	return nil
}

func (d *Dry) WaitHealthy(ctx context.Context, service string, timeout time.Duration) error {
	if d.swarm == nil {
		return d.c.WaitHealthy(ctx, service, timeout)
	}
	d.printf("# wait until %s's task runs and passes its health probe (at most %s)\n", service, timeout)
	return nil
}

func (d *Dry) ContainerID(ctx context.Context, service string) (string, error) {
	if d.swarm == nil {
		return d.c.ContainerID(ctx, service)
	}
	return "", nil
}

// Run prints the tool's command. On a swarm that is each job of the tool's run: its inputs as
// configs, and its one-task service inside the transfer wrapper (swarm.WrapJob), which is what a
// run creates.
func (d *Dry) Run(ctx context.Context, o OneOff) ([]byte, []byte, int, error) {
	if d.swarm == nil {
		if o.Window == nil {
			return d.c.Run(ctx, o.Service, o.Name, o.Entrypoint, o.Env, o.Args)
		}
		stdout, stderr, code, _, _, err := d.c.RunTimed(ctx, o.Service, o.Name, o.Entrypoint, o.Env, o.Args)
		return stdout, stderr, code, err
	}
	s := d.swarm
	jobs, _, notes, err := s.toolJobs(ctx, o, s.calls.with(o.Env))
	if err != nil {
		return nil, nil, -1, err
	}
	for _, n := range notes {
		d.printf("# %s\n", n)
	}
	for _, j := range jobs {
		spec, err := swarm.WrapJob(j)
		if err != nil {
			return nil, nil, -1, err
		}
		for name, data := range j.Inputs {
			line, full := s.sw.CreateConfigLine("in-" + name)
			d.printf("# input %s (%d bytes) on stdin\n+ %s\n", name, len(data), line)
			spec.Configs = append(spec.Configs, j.InputMount(spec, name, full))
		}
		d.printf("# %s runs once; its files come back through `%s service logs --raw %s` (internal/swarm/transfer.go)\n", o.Service, s.sw.Docker, spec.Name)
		d.printf("+ %s\n", s.sw.CreateServiceLine(spec))
		d.printf("+ %s\n", s.sw.RemoveServiceLine(spec.Name))
	}
	return nil, nil, 0, nil
}

func (d *Dry) Remove(ctx context.Context, service string) error {
	if d.swarm == nil {
		return d.c.Remove(ctx, service)
	}
	if srv, ok := d.swarm.servers[service]; ok {
		d.printf("+ %s\n", d.swarm.sw.RemoveServiceLine(srv.name))
		delete(d.swarm.servers, service)
	}
	return nil
}

func (d *Dry) Inspect(ctx context.Context, id string) (compose.ContainerState, error) {
	if d.swarm == nil {
		return d.c.Inspect(ctx, id)
	}
	return compose.ContainerState{}, nil
}

func (d *Dry) Logs(ctx context.Context, id string) ([]byte, error) {
	if d.swarm == nil {
		return d.c.Logs(ctx, id)
	}
	return nil, nil
}

func (d *Dry) PlaceStack(context.Context, []string, string) error  { return nil }
func (d *Dry) Annotate(*record.Record)                             {}
func (d *Dry) Describe(context.Context) Description                { return Description{} }
func (d *Dry) Lost() error                                         { return nil }
func (d *Dry) Down(context.Context) error                          { return nil }
func (d *Dry) ForceRemove(context.Context) error                   { return nil }
func (d *Dry) ProjectContainers(context.Context) ([]string, error) { return nil, nil }
