package engine

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"
	"time"

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

// Compose runs everything on this machine through the compose CLI (and, with Fast, each run's
// containers through the docker CLI).
type Compose struct {
	c         *compose.Client
	calls     *calls
	fast      bool
	published bool
	grafana   bool

	mu      sync.Mutex
	servers map[string]fastServer // the fast path's servers, by compose service
}

type fastServer struct {
	id   string
	spec *compose.Service
}

// NewCompose is the Compose engine over a compose client.
func NewCompose(o ComposeOptions) *Compose {
	return &Compose{c: o.Client, calls: &calls{docker: o.Docker, tracker: o.Tracker}, fast: o.Fast,
		published: o.Published, grafana: o.Grafana, servers: map[string]fastServer{}}
}

// Capabilities: compose pins every container to the layout's cores of this host.
func (s *Compose) Capabilities() Capabilities {
	return Capabilities{Name: NameCompose, PinsCores: true, HostCores: true, ClientNodes: 1, Grafana: true}
}

// Prepare has nothing to do: the images are this machine's.
func (s *Compose) Prepare(context.Context, images.Set, map[string]string) error { return nil }

func (s *Compose) Up(ctx context.Context, env map[string]string, services ...string) error {
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
func (s *Compose) Locate(ctx context.Context) (string, string, error) {
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

func (s *Compose) server(service string) (fastServer, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	srv, ok := s.servers[service]
	return srv, ok
}

func (s *Compose) Recreate(ctx context.Context, service string, env map[string]string) error {
	env = s.calls.with(env)
	if !s.fast {
		return s.calls.bounded(ctx, recreateTimeout, func(ctx context.Context) error { return s.c.Recreate(ctx, service, env) })
	}
	return s.calls.bounded(ctx, recreateTimeout, func(ctx context.Context) error {
		spec, err := s.c.ServiceSpec(ctx, service, env)
		if err != nil {
			return err
		}
		if old, ok := s.server(service); ok {
			_ = s.c.RemoveByID(ctx, old.id)
		}
		id, err := s.c.StartFast(ctx, compose.FastContainer{Service: spec, Name: s.c.ProjectName() + "-" + service, Env: env})
		if id != "" {
			s.calls.note(id, "server "+service)
			s.mu.Lock()
			s.servers[service] = fastServer{id: id, spec: spec}
			s.mu.Unlock()
		}
		return err
	})
}

// WaitHealthy waits for compose's health status, or on the fast path runs the service's own
// health check in the container until it passes, every 50 ms at first: Docker's own check would
// wait a whole interval before its first probe, and probing throughout the run would be counted
// as the server's CPU.
func (s *Compose) WaitHealthy(ctx context.Context, service string, timeout time.Duration) error {
	if !s.fast {
		return s.calls.bounded(ctx, timeout+CallTimeout, func(ctx context.Context) error { return s.c.WaitHealthy(ctx, service, timeout) })
	}
	srv, ok := s.server(service)
	if !ok {
		return fmt.Errorf("no container of %s was started", service)
	}
	probe := func(ctx context.Context) error { return s.c.Probe(ctx, srv.id, srv.spec) }
	gone := func() error {
		if st, ierr := s.Inspect(ctx, srv.id); ierr == nil && (st.Status == "exited" || st.Status == "dead") {
			b, _ := s.Logs(ctx, srv.id)
			return fmt.Errorf("%s exited (code %d) before it was healthy; its log ends:\n    %s", service, st.ExitCode, strings.ReplaceAll(lastLines(b, 15), "\n", "\n    "))
		}
		return nil
	}
	return s.calls.probeUntilHealthy(ctx, service, timeout, probe, gone)
}

func (s *Compose) ContainerID(ctx context.Context, service string) (string, error) {
	if s.fast {
		srv, ok := s.server(service)
		if !ok {
			return "", fmt.Errorf("no container of %s was started", service)
		}
		return srv.id, nil
	}
	var id string
	err := s.calls.bounded(ctx, CallTimeout, func(ctx context.Context) error {
		var err error
		id, err = s.c.ContainerID(ctx, service)
		return err
	})
	s.calls.note(id, "server "+service)
	return id, err
}

func (s *Compose) Remove(ctx context.Context, service string) error {
	if !s.fast {
		return s.calls.bounded(ctx, removeTimeout, func(ctx context.Context) error { return s.c.Remove(ctx, service) })
	}
	srv, ok := s.server(service)
	if !ok {
		return nil
	}
	err := s.calls.bounded(ctx, removeTimeout, func(ctx context.Context) error { return s.c.RemoveByID(ctx, srv.id) })
	if err == nil {
		s.mu.Lock()
		delete(s.servers, service)
		s.mu.Unlock()
	}
	return err
}

func (s *Compose) Inspect(ctx context.Context, id string) (compose.ContainerState, error) {
	return s.calls.inspect(ctx, s.c, id)
}

func (s *Compose) Logs(ctx context.Context, id string) ([]byte, error) {
	return s.calls.logs(ctx, s.c, id)
}

// PlaceStack moves the running containers of services onto cpuset. One that cannot be moved
// (stopped, gone) does not keep the others where they were.
func (s *Compose) PlaceStack(ctx context.Context, services []string, cpuset string) error {
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

// Run runs a tool within limit; a tool still running then is stopped and its container removed.
func (s *Compose) Run(ctx context.Context, o OneOff) ([]byte, []byte, int, error) {
	env := s.calls.with(o.Env)
	var stdout, stderr []byte
	code := -1
	s.calls.note(o.Name, "load tool "+o.Service)
	err := s.calls.bounded(ctx, o.Limit, func(ctx context.Context) error {
		var err error
		switch {
		case s.fast:
			spec, serr := s.c.ServiceSpec(ctx, o.Service, env)
			if serr != nil {
				return serr
			}
			stdout, stderr, code, err = s.c.RunFast(ctx, compose.FastContainer{
				Service: spec, Name: o.Name, Entrypoint: o.Entrypoint, Env: env, Args: o.Args, OneOff: true})
		case o.Window == nil:
			stdout, stderr, code, err = s.c.Run(ctx, o.Service, o.Name, o.Entrypoint, env, o.Args)
		default:
			// The tool's window comes from its container's own start and finish, not from when
			// compose returns: the container's tear-down must not dilute the CPU figures.
			var started, finished time.Time
			stdout, stderr, code, started, finished, err = s.c.RunTimed(ctx, o.Service, o.Name, o.Entrypoint, env, o.Args)
			if !started.IsZero() {
				o.Window[0], o.Window[1] = started, finished
			}
		}
		return err
	})
	return stdout, stderr, code, err
}

// Annotate says the run ran on compose.
func (s *Compose) Annotate(rec *record.Record) { rec.Engine = NameCompose }

// Describe: compose adds nothing to run.json beyond its version, which the runner records.
func (s *Compose) Describe(context.Context) Description { return Description{} }

func (s *Compose) Lost() error { return s.calls.lost() }

func (s *Compose) Down(ctx context.Context) error        { return s.c.Down(ctx) }
func (s *Compose) ForceRemove(ctx context.Context) error { return s.c.ForceRemove(ctx) }
func (s *Compose) ProjectContainers(ctx context.Context) ([]string, error) {
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
