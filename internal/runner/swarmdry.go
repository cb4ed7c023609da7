package runner

import (
	"context"
	"fmt"
	"io"
	"time"

	"github.com/protobench/protobench/internal/compose"
	"github.com/protobench/protobench/internal/swarm"
)

// swarmDryStack is `--dry-run --engine swarm`: it prints the docker commands a swarm run would
// make, built by the swarm stack's own code from the compose services as `compose config`
// renders them (read-only), and starts nothing. It plans for a single node, the placement of a
// swarm without role labels; with labelled nodes each service also carries its role's constraint.
type swarmDryStack struct {
	s   *swarmStack
	out io.Writer
}

func newSwarmDryStack(cs *composeStack, project, repoRoot, rawDir string, out io.Writer) *swarmDryStack {
	sw := &swarm.Client{Docker: cs.docker, Project: project}
	s := &swarmStack{composeStack: cs, sw: sw, place: placement{single: true}, repoRoot: repoRoot, rawDir: rawDir,
		log: func(string, ...any) {}, servers: map[string]*swarmServer{}, owners: map[string]string{}}
	return &swarmDryStack{s: s, out: out}
}

func (d *swarmDryStack) printf(format string, args ...any) { fmt.Fprintf(d.out, format, args...) }

// Up prints the project's network and the observability services.
func (d *swarmDryStack) Up(ctx context.Context, env map[string]string, services ...string) error {
	d.s.base = d.s.with(env)
	d.printf("+ %s\n", d.s.sw.CreateNetworkLine(ctx))
	for _, svc := range services {
		if svc == "grafana" {
			d.printf("# grafana is not started on a swarm: import dashboards/*.json into a Grafana of your own\n")
			continue
		}
		spec, err := d.s.observabilityService(ctx, svc, func(cfg []byte) (string, error) {
			line, name := d.s.sw.CreateConfigLine("prometheus")
			d.printf("# Prometheus' configuration (%d bytes, internal/swarm/promconfig) on stdin; a run gives the config a unique suffix\n+ %s\n", len(cfg), line)
			return name, nil
		})
		if err != nil {
			return fmt.Errorf("%s: %w", svc, err)
		}
		d.printf("+ %s\n", d.s.sw.CreateServiceLine(spec))
	}
	d.printf("# wait until every service above has a running task\n")
	return nil
}

func (d *swarmDryStack) Recreate(ctx context.Context, service string, env map[string]string) error {
	cs, spec, err := d.s.serverService(ctx, service, d.s.with(env))
	if err != nil {
		return err
	}
	d.s.servers[service] = &swarmServer{name: spec.Name, spec: cs}
	d.printf("+ %s\n", d.s.sw.CreateServiceLine(spec))
	return nil
}

func (d *swarmDryStack) WaitHealthy(_ context.Context, service string, timeout time.Duration) error {
	d.printf("# wait until %s's task runs and passes its health probe (at most %s)\n", service, timeout)
	return nil
}

func (d *swarmDryStack) ContainerID(context.Context, string) (string, error) { return "", nil }

// Run prints each job of the tool's run: its inputs as configs, and its one-task service inside
// the transfer wrapper (swarm.WrapJob), which is what a run creates.
func (d *swarmDryStack) Run(ctx context.Context, o OneOff) ([]byte, []byte, int, error) {
	jobs, _, notes, err := d.s.toolJobs(ctx, o, d.s.with(o.Env))
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
			line, full := d.s.sw.CreateConfigLine("in-" + name)
			d.printf("# input %s (%d bytes) on stdin\n+ %s\n", name, len(data), line)
			spec.Configs = append(spec.Configs, j.InputMount(spec, name, full))
		}
		d.printf("# %s runs once; its files come back through `%s service logs --raw %s` (internal/swarm/transfer.go)\n", o.Service, d.s.sw.Docker, spec.Name)
		d.printf("+ %s\n", d.s.sw.CreateServiceLine(spec))
		d.printf("+ %s\n", d.s.sw.RemoveServiceLine(spec.Name))
	}
	return nil, nil, 0, nil
}

func (d *swarmDryStack) Remove(_ context.Context, service string) error {
	if srv, ok := d.s.servers[service]; ok {
		d.printf("+ %s\n", d.s.sw.RemoveServiceLine(srv.name))
		delete(d.s.servers, service)
	}
	return nil
}

func (d *swarmDryStack) Inspect(context.Context, string) (compose.ContainerState, error) {
	return compose.ContainerState{}, nil
}

func (d *swarmDryStack) Logs(context.Context, string) ([]byte, error) { return nil, nil }
