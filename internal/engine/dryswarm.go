package engine

import (
	"context"
	"fmt"
	"time"

	"github.com/protobench/protobench/internal/swarm"
)

// DrySwarm is the dry run of the Swarm engine. Its commands are built by the swarm engine's own
// code from the compose services as `compose config` renders them (read-only), planned for a
// single node, the placement of a swarm without role labels; with labelled nodes each service
// also carries its role's constraint.
type DrySwarm struct {
	dryStack
	s *Swarm // builds the services a swarm run would create; it runs none of them
}

// NewDrySwarm is the dry run of the Swarm engine, planned for a single node.
func NewDrySwarm(o DryOptions) *DrySwarm {
	sw := &swarm.Client{Docker: o.Docker, Project: o.Project}
	return &DrySwarm{dryStack: dryStack{out: o.Out}, s: &Swarm{c: o.Client, calls: &calls{docker: o.Docker}, sw: sw, place: placement{single: true},
		repoRoot: o.RepoRoot, rawDir: o.RawDir, goServers: o.GoServers, project: o.Project,
		log: func(string, ...any) {}, servers: map[string]*swarmServer{}, owners: map[string]string{}}}
}

// Capabilities: a dry run moves nothing and measures nothing.
func (d *DrySwarm) Capabilities() Capabilities {
	return Capabilities{Name: NameSwarm, ClientNodes: 1}
}

// Up prints the swarm's network and observability services.
func (d *DrySwarm) Up(ctx context.Context, env map[string]string, services ...string) error {
	s := d.s
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

func (d *DrySwarm) Recreate(ctx context.Context, service string, env map[string]string) error {
	s := d.s
	cs, spec, err := s.serverService(ctx, service, s.calls.with(env))
	if err != nil {
		return err
	}
	s.servers[service] = &swarmServer{name: spec.Name, spec: cs}
	d.printf("+ %s\n", s.sw.CreateServiceLine(spec))
	return nil
}

func (d *DrySwarm) WaitHealthy(_ context.Context, service string, timeout time.Duration) error {
	d.printf("# wait until %s's task runs and passes its health probe (at most %s)\n", service, timeout)
	return nil
}

func (d *DrySwarm) ContainerID(context.Context, string) (string, error) { return "", nil }

// Run prints each job of the tool's run: its inputs as configs, and its one-task service inside
// the transfer wrapper (swarm.WrapJob), which is what a run creates.
func (d *DrySwarm) Run(ctx context.Context, o OneOff) ([]byte, []byte, int, error) {
	s := d.s
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

func (d *DrySwarm) Remove(_ context.Context, service string) error {
	if srv, ok := d.s.servers[service]; ok {
		d.printf("+ %s\n", d.s.sw.RemoveServiceLine(srv.name))
		delete(d.s.servers, service)
	}
	return nil
}

func (d *DrySwarm) Inspect(context.Context, string) (ContainerState, error) {
	return ContainerState{}, nil
}

func (d *DrySwarm) Logs(context.Context, string) ([]byte, error) { return nil, nil }
