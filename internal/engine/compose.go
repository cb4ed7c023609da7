package engine

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/protobench/protobench/internal/compose"
	"github.com/protobench/protobench/internal/images"
	"github.com/protobench/protobench/internal/record"
)

// ComposeOptions configure the Compose engine.
type ComposeOptions struct {
	Client  *compose.Client
	Docker  string // the docker CLI
	Tracker Tracker
	// Fast makes each run's own containers (a fresh server, a one-off tool) with the docker CLI
	// from the services as compose renders them (compose.FastContainer); the long-lived stack
	// and the teardown stay with compose. It exists for speed: with docker-compose 1.x each
	// compose call costs a second or more of Python start-up, and a run made four of them, so a
	// warm run spent about 5 s outside its warm-up, measurement and cool-down.
	Fast bool
	// Published says Prometheus and Grafana are published on 127.0.0.1; Grafana that its
	// image is available, so it runs.
	Published, Grafana bool
}

// FastPathEnabled says whether runs use the fast path; PROTOBENCH_FAST=0 turns it off, so a
// suspected difference can be checked against plain compose.
func FastPathEnabled() bool { return os.Getenv("PROTOBENCH_FAST") != "0" }

// NewCompose is the Compose engine over a compose client: ComposeFast when o.Fast asks for the
// docker-CLI fast path, else Compose. Both share the stack (composeStack); only the per-run
// containers differ.
func NewCompose(o ComposeOptions) Engine {
	if o.Fast {
		return &ComposeFast{composeStack: newComposeStack(o), servers: map[string]fastServer{}}
	}
	return &Compose{composeStack: newComposeStack(o)}
}

// composeStack is what the compose engines share: the long-lived stack on this machine through
// the compose CLI, the bounded calls, and the reading of a container after its run.
type composeStack struct {
	c         *compose.Client
	calls     *calls
	published bool
	grafana   bool
}

func newComposeStack(o ComposeOptions) composeStack {
	return composeStack{c: o.Client, calls: &calls{docker: o.Docker, tracker: o.Tracker}, published: o.Published, grafana: o.Grafana}
}

// Capabilities: compose pins every container to the layout's cores of this host.
func (s *composeStack) Capabilities() Capabilities {
	return Capabilities{Name: NameCompose, PinsCores: true, HostCores: true, ClientNodes: 1, Grafana: true}
}

// Prepare has nothing to do: the images are this machine's.
func (s *composeStack) Prepare(context.Context, images.Set, map[string]string) error { return nil }

func (s *composeStack) Up(ctx context.Context, env map[string]string, services ...string) error {
	s.calls.base = s.calls.with(env)
	s.calls.arm()
	err := s.calls.bounded(ctx, upTimeout, func(ctx context.Context) error { return s.c.Up(ctx, s.calls.base, services...) })
	lctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), CallTimeout)
	defer cancel()
	if s.calls.lost() == nil {
		if lines, lerr := s.c.ProjectContainers(lctx); lerr == nil {
			for _, l := range lines {
				id, name, _ := strings.Cut(l, " ")
				s.calls.note(id, name)
			}
		}
	}
	return err
}

// Locate finds Prometheus (and Grafana) as the host reaches them: on the 127.0.0.1 port the
// user published, or else at the container's address on the compose network, which needs no
// published port.
func (s *composeStack) Locate(ctx context.Context) (string, string, error) {
	ctx, cancel := context.WithTimeout(ctx, CallTimeout)
	defer cancel()
	find := func(service string, port int) (string, error) {
		if s.published {
			if p, err := s.c.PublishedHostPort(ctx, service, port); err == nil && p > 0 {
				return fmt.Sprintf("http://127.0.0.1:%d", p), nil
			}
		}
		ip, err := s.c.ServiceIP(ctx, service)
		if err != nil {
			return "", err
		}
		return fmt.Sprintf("http://%s:%d", ip, port), nil
	}
	prom, err := find("prometheus", 9090)
	if err != nil {
		return "", "", fmt.Errorf("find Prometheus: %w", err)
	}
	graf := ""
	if s.grafana {
		graf, _ = find("grafana", 3000)
	}
	return prom, graf, nil
}

// PlaceStack moves the running containers of services onto cpuset. One that cannot be moved
// (stopped, gone) does not keep the others where they were.
func (s *composeStack) PlaceStack(ctx context.Context, services []string, cpuset string) error {
	var errs []error
	for _, svc := range services {
		err := s.calls.bounded(ctx, CallTimeout, func(ctx context.Context) error {
			id, err := s.c.ContainerID(ctx, svc)
			if err != nil {
				return err
			}
			if id == "" {
				return errors.New("no container")
			}
			return s.c.SetCPUSet(ctx, id, cpuset)
		})
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", svc, err))
		}
	}
	return errors.Join(errs...)
}

func (s *composeStack) Inspect(ctx context.Context, id string) (ContainerState, error) {
	return s.calls.inspect(ctx, s.c, id)
}

func (s *composeStack) Logs(ctx context.Context, id string) ([]byte, error) {
	return s.calls.logs(ctx, s.c, id)
}

// address is the address of container id on the project's network (ServerReacher).
func (s *composeStack) address(ctx context.Context, service, id string) (string, error) {
	if id == "" {
		return "", fmt.Errorf("%s has no container", service)
	}
	ctx, cancel := context.WithTimeout(ctx, CallTimeout)
	defer cancel()
	return s.c.ContainerIP(ctx, id)
}

// Annotate says the run ran on compose.
func (s *composeStack) Annotate(rec *record.Record) { rec.Engine = NameCompose }

// Describe: compose adds nothing to run.json beyond its version, which the runner records.
func (s *composeStack) Describe(context.Context) Description { return Description{} }

func (s *composeStack) Lost() error { return s.calls.lost() }

func (s *composeStack) Down(ctx context.Context) error        { return s.c.Down(ctx) }
func (s *composeStack) ForceRemove(ctx context.Context) error { return s.c.ForceRemove(ctx) }
func (s *composeStack) ProjectContainers(ctx context.Context) ([]string, error) {
	return s.c.ProjectContainers(ctx)
}

// lastLines is the last n lines of b.
func lastLines(b []byte, n int) string {
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}
