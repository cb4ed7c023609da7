package engine

import (
	"context"
	"time"
)

// Compose runs everything on this machine through the compose CLI: the stack (composeStack)
// and each run's fresh server and one-off tool, as compose services.
type Compose struct {
	composeStack
}

func (s *Compose) Recreate(ctx context.Context, service string, env map[string]string) error {
	env = s.calls.with(env)
	return s.calls.bounded(ctx, recreateTimeout, func(ctx context.Context) error { return s.c.Recreate(ctx, service, env) })
}

// WaitHealthy waits for compose's health status.
func (s *Compose) WaitHealthy(ctx context.Context, service string, timeout time.Duration) error {
	return s.calls.bounded(ctx, timeout+CallTimeout, func(ctx context.Context) error { return s.c.WaitHealthy(ctx, service, timeout) })
}

func (s *Compose) ContainerID(ctx context.Context, service string) (string, error) {
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
	return s.calls.bounded(ctx, removeTimeout, func(ctx context.Context) error { return s.c.Remove(ctx, service) })
}

// Run runs a tool within limit; a tool still running then is stopped and its container removed.
func (s *Compose) Run(ctx context.Context, o OneOff) ([]byte, []byte, int, error) {
	env := s.calls.with(o.Env)
	var stdout, stderr []byte
	code := -1
	s.calls.note(o.Name, "load tool "+o.Service)
	err := s.calls.bounded(ctx, o.Limit, func(ctx context.Context) error {
		var err error
		if o.Window == nil {
			stdout, stderr, code, err = s.c.Run(ctx, o.Service, o.Name, o.Entrypoint, env, o.Args)
			return err
		}
		// The tool's window comes from its container's own start and finish, not from when
		// compose returns: the container's tear-down must not dilute the CPU figures.
		var started, finished time.Time
		stdout, stderr, code, started, finished, err = s.c.RunTimed(ctx, o.Service, o.Name, o.Entrypoint, env, o.Args)
		if !started.IsZero() {
			o.Window[0], o.Window[1] = started, finished
		}
		return err
	})
	return stdout, stderr, code, err
}

// ServiceAddress is the address of service's current container on the project's network.
func (s *Compose) ServiceAddress(ctx context.Context, service string) (string, error) {
	id, err := s.ContainerID(ctx, service)
	if err != nil {
		return "", err
	}
	return s.address(ctx, service, id)
}
