package compose

import (
	"context"
	"errors"
)

// Up starts services (detached) and leaves running ones alone. Before it starts Prometheus or
// Grafana it checks that their published port is free, so a taken port gives an error naming it
// instead of a half-started stack.
func (c *Client) Up(ctx context.Context, env map[string]string, services ...string) error {
	if len(services) == 0 {
		return errors.New("compose up: name the services to start")
	}
	merged := c.environment(env)
	for _, s := range services {
		if err := c.checkPublishedPort(ctx, s, merged); err != nil {
			return err
		}
	}
	_, _, err := c.compose(ctx, env, append([]string{"up", "-d"}, services...)...)
	return err
}

// Recreate starts a fresh container of service (a new one even when one is running), without
// touching its dependencies: every benchmark step gets a server with no history.
func (c *Client) Recreate(ctx context.Context, service string, env map[string]string) error {
	_, _, err := c.compose(ctx, env, "up", "-d", "--no-deps", "--force-recreate", "--renew-anon-volumes", service)
	return err
}

// Stop stops service's containers and keeps them.
func (c *Client) Stop(ctx context.Context, service string) error {
	_, _, err := c.compose(ctx, nil, "stop", service)
	return err
}

// Remove stops and removes service's containers.
func (c *Client) Remove(ctx context.Context, service string) error {
	_, _, err := c.compose(ctx, nil, "rm", "--force", "--stop", service)
	return err
}

// Down stops and removes the project's containers and network; the Prometheus volume stays, so
// earlier runs remain in Grafana.
func (c *Client) Down(ctx context.Context) error {
	_, _, err := c.compose(ctx, nil, "down", "--remove-orphans", "--timeout", "10")
	return err
}
