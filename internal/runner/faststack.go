package runner

import (
	"context"
	"fmt"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/protobench/protobench/internal/compose"
)

// fastStack is composeStack with each run's own containers (a fresh server, a one-off tool)
// made by the docker CLI from the services as compose renders them (compose.FastContainer). The
// long-lived stack (Prometheus, cAdvisor, node-exporter) and the teardown stay with compose. It
// exists for speed: with docker-compose 1.x each compose call costs a second or more of Python
// start-up, and a run made four of them, so a warm run spent about 5 s outside its warm-up,
// measurement and cool-down.
type fastStack struct {
	*composeStack

	mu      sync.Mutex
	servers map[string]fastServer // by compose service
}

type fastServer struct {
	id   string
	spec *compose.Service
}

// fastPathEnabled says whether runs use the fast path; PROTOBENCH_FAST=0 turns it off, so a
// suspected difference can be checked against plain compose.
func fastPathEnabled() bool { return os.Getenv("PROTOBENCH_FAST") != "0" }

func newFastStack(s *composeStack) *fastStack {
	return &fastStack{composeStack: s, servers: map[string]fastServer{}}
}

func (s *fastStack) server(service string) (fastServer, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	srv, ok := s.servers[service]
	return srv, ok
}

func (s *fastStack) Recreate(ctx context.Context, service string, env map[string]string) error {
	env = s.with(env)
	return s.bounded(ctx, recreateTimeout, func(ctx context.Context) error {
		spec, err := s.c.ServiceSpec(ctx, service, env)
		if err != nil {
			return err
		}
		if old, ok := s.server(service); ok {
			_ = s.c.RemoveByID(ctx, old.id)
		}
		id, err := s.c.StartFast(ctx, compose.FastContainer{Service: spec, Name: s.c.ProjectName() + "-" + service, Env: env})
		if id != "" {
			s.td.note(id, "server "+service)
			s.mu.Lock()
			s.servers[service] = fastServer{id: id, spec: spec}
			s.mu.Unlock()
		}
		return err
	})
}

// WaitHealthy runs the service's own health check in the container until it passes, every
// 50 ms at first: Docker's own check would wait a whole interval before its first probe, and
// probing throughout the run would be counted as the server's CPU.
func (s *fastStack) WaitHealthy(ctx context.Context, service string, timeout time.Duration) error {
	srv, ok := s.server(service)
	if !ok {
		return fmt.Errorf("no container of %s was started", service)
	}
	deadline := time.Now().Add(timeout)
	pause := 50 * time.Millisecond
	var last error
	for {
		err := s.bounded(ctx, dockerCallTimeout, func(ctx context.Context) error { return s.c.Probe(ctx, srv.id, srv.spec) })
		if err == nil {
			return nil
		}
		last = err
		if lost := s.lost(); lost != nil {
			return lost
		}
		if st, ierr := s.Inspect(ctx, srv.id); ierr == nil && (st.Status == "exited" || st.Status == "dead") {
			return fmt.Errorf("%s exited (code %d) before it was healthy; its log ends:\n%s", service, st.ExitCode, s.logTail(ctx, srv.id))
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%s not healthy after %s; last probe: %v", service, timeout, last)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(pause):
		}
		if pause < 500*time.Millisecond {
			pause *= 2
		}
	}
}

func (s *fastStack) logTail(ctx context.Context, id string) string {
	b, _ := s.Logs(ctx, id)
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	if len(lines) > 15 {
		lines = lines[len(lines)-15:]
	}
	return "    " + strings.Join(lines, "\n    ")
}

func (s *fastStack) ContainerID(ctx context.Context, service string) (string, error) {
	srv, ok := s.server(service)
	if !ok {
		return "", fmt.Errorf("no container of %s was started", service)
	}
	return srv.id, nil
}

func (s *fastStack) Remove(ctx context.Context, service string) error {
	srv, ok := s.server(service)
	if !ok {
		return nil
	}
	err := s.bounded(ctx, removeTimeout, func(ctx context.Context) error { return s.c.RemoveByID(ctx, srv.id) })
	if err == nil {
		s.mu.Lock()
		delete(s.servers, service)
		s.mu.Unlock()
	}
	return err
}

// Run runs a tool within its limit; a tool still running then is stopped and its container
// removed.
func (s *fastStack) Run(ctx context.Context, o OneOff) ([]byte, []byte, int, error) {
	env := s.with(o.Env)
	var stdout, stderr []byte
	code := -1
	s.td.note(o.Name, "load tool "+o.Service)
	err := s.bounded(ctx, o.Limit, func(ctx context.Context) error {
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
