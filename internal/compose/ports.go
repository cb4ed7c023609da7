package compose

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strconv"
)

// ErrPortInUse is wrapped by every *PortInUseError.
var ErrPortInUse = errors.New("port already in use")

// PortInUseError says which published port is taken and how to choose another.
type PortInUseError struct {
	Service string // prometheus or grafana
	Port    int
	EnvVar  string // the variable that moves it
	Detail  string
}

// Error is one line meant for the user.
func (e *PortInUseError) Error() string {
	return fmt.Sprintf("port %d on 127.0.0.1 (%s) is already in use: stop what holds it, or set %s to a free port (%s)",
		e.Port, e.Service, e.EnvVar, e.Detail)
}

// Unwrap makes errors.Is(err, ErrPortInUse) true.
func (e *PortInUseError) Unwrap() error { return ErrPortInUse }

// publishedPorts are the services that publish a port on the host, the variable that sets it and
// its default (they must match docker-compose.yml).
var publishedPorts = map[string]struct {
	envVar      string
	defaultPort int
}{
	"prometheus": {"PROTOBENCH_PROMETHEUS_PORT", 9090},
	"grafana":    {"PROTOBENCH_GRAFANA_PORT", 3000},
}

// PublishedPort is the host port service publishes on 127.0.0.1 under env, or 0.
func PublishedPort(service string, env map[string]string) (int, string, error) {
	p, ok := publishedPorts[service]
	if !ok {
		return 0, "", nil
	}
	port := p.defaultPort
	if v := env[p.envVar]; v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > 65535 {
			return 0, p.envVar, fmt.Errorf("%s=%q: want a port number 1-65535", p.envVar, v)
		}
		port = n
	}
	return port, p.envVar, nil
}

// checkPublishedPort fails when service publishes a port that something else holds. A running
// container of this very service holds it legitimately (a stack kept up with --keep-up).
func (c *Client) checkPublishedPort(ctx context.Context, service string, env map[string]string) error {
	if !c.publishes() {
		return nil
	}
	port, envVar, err := PublishedPort(service, env)
	if err != nil || port == 0 || c.opts.DryRun {
		return err
	}
	if id, err := c.ContainerID(ctx, service); err == nil && id != "" {
		if state, err := c.docker(ctx, "inspect", "--format", "{{.State.Running}}", id); err == nil && state == "true" {
			return nil
		}
	}
	if err := PortFree(port); err != nil {
		return &PortInUseError{Service: service, Port: port, EnvVar: envVar, Detail: err.Error()}
	}
	return nil
}

// PortFree reports whether 127.0.0.1:port can be bound right now.
func PortFree(port int) error {
	l, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)))
	if err != nil {
		return err
	}
	return l.Close()
}
