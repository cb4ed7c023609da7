package engine

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/protobench/protobench/internal/compose"
)

// ComposeFast is the Compose engine with the docker-CLI fast path (ComposeOptions.Fast): the
// stack and the teardown stay with compose (composeStack), while each run's fresh server and
// one-off tool are made with the docker CLI from the services as compose renders them.
type ComposeFast struct {
	composeStack

	mu      sync.Mutex
	servers map[string]fastServer // the servers started, by compose service
}

type fastServer struct {
	id   string
	spec *compose.Service
}

func (s *ComposeFast) server(service string) (fastServer, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	srv, ok := s.servers[service]
	return srv, ok
}

func (s *ComposeFast) Recreate(ctx context.Context, service string, env map[string]string) error {
	env = s.calls.with(env)
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

// WaitHealthy runs the service's own health check in the container until it passes, every 50 ms
// at first: Docker's own check would wait a whole interval before its first probe, and probing
// throughout the run would be counted as the server's CPU.
func (s *ComposeFast) WaitHealthy(ctx context.Context, service string, timeout time.Duration) error {
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

func (s *ComposeFast) ContainerID(_ context.Context, service string) (string, error) {
	srv, ok := s.server(service)
	if !ok {
		return "", fmt.Errorf("no container of %s was started", service)
	}
	return srv.id, nil
}

func (s *ComposeFast) Remove(ctx context.Context, service string) error {
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

// Run runs a tool within limit; a tool still running then is stopped and its container removed.
func (s *ComposeFast) Run(ctx context.Context, o OneOff) ([]byte, []byte, int, error) {
	env := s.calls.with(o.Env)
	var stdout, stderr []byte
	code := -1
	s.calls.note(o.Name, "load tool "+o.Service)
	err := s.calls.bounded(ctx, o.Limit, func(ctx context.Context) error {
		spec, err := s.c.ServiceSpec(ctx, o.Service, env)
		if err != nil {
			return err
		}
		stdout, stderr, code, err = s.c.RunFast(ctx, compose.FastContainer{
			Service: spec, Name: o.Name, Entrypoint: o.Entrypoint, Env: env, Args: o.Args, OneOff: true})
		return err
	})
	return stdout, stderr, code, err
}

// ServiceAddress is the address of service's current container on the project's network.
func (s *ComposeFast) ServiceAddress(ctx context.Context, service string) (string, error) {
	id, err := s.ContainerID(ctx, service)
	if err != nil {
		return "", err
	}
	return s.address(ctx, service, id)
}
