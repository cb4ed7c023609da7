package swarm

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"
)

// Objects are the project's swarm objects by kind: services, networks, configs, secrets.
type Objects struct {
	Services, Networks, Configs, Secrets []string
}

// Empty says whether nothing is left.
func (o Objects) Empty() bool {
	return len(o.Services)+len(o.Networks)+len(o.Configs)+len(o.Secrets) == 0
}

func (o Objects) String() string {
	var parts []string
	for _, k := range []struct {
		what  string
		names []string
	}{{"services", o.Services}, {"networks", o.Networks}, {"configs", o.Configs}, {"secrets", o.Secrets}} {
		if len(k.names) > 0 {
			parts = append(parts, k.what+" "+strings.Join(k.names, ", "))
		}
	}
	if len(parts) == 0 {
		return "nothing"
	}
	return strings.Join(parts, "; ")
}

// List finds the objects carrying the project's label.
func (c *Client) List(ctx context.Context) (Objects, error) {
	var o Objects
	filter := "label=" + ProjectLabel + "=" + c.Project
	for _, k := range []struct {
		args []string
		dst  *[]string
	}{
		{[]string{"service", "ls", "--filter", filter, "--format", "{{.Name}}"}, &o.Services},
		{[]string{"network", "ls", "--filter", filter, "--format", "{{.Name}}"}, &o.Networks},
		{[]string{"config", "ls", "--filter", filter, "--format", "{{.Name}}"}, &o.Configs},
		{[]string{"secret", "ls", "--filter", filter, "--format", "{{.Name}}"}, &o.Secrets},
	} {
		out, err := c.run(ctx, k.args...)
		if err != nil {
			return o, err
		}
		*k.dst = strings.Fields(out)
	}
	return o, nil
}

// RemoveAll removes every service, network, config and secret carrying the project's label, in
// that order: a network or config in use by a task cannot go before the task has. It waits for
// the services' containers on this node to be gone, so the network can be removed; tasks on
// other nodes are their daemons' to remove. A replicated-job's container stays after its service
// is removed (moby/moby#42789) and would hold that wait until ctx ends: the suite's jobs are
// replicated services never restarted (Job), whose containers go with them.
func (c *Client) RemoveAll(ctx context.Context) error {
	o, err := c.List(ctx)
	if err != nil {
		return err
	}
	var errs []error
	if len(o.Services) > 0 {
		if out, err := c.run(ctx, append([]string{"service", "rm"}, o.Services...)...); err != nil && !strings.Contains(out, "not found") {
			errs = append(errs, err)
		}
		errs = append(errs, c.waitContainersGone(ctx))
	}
	for _, n := range o.Networks {
		errs = append(errs, c.removeNetwork(ctx, n))
	}
	if len(o.Configs) > 0 {
		errs = append(errs, c.RemoveConfigs(ctx, o.Configs...))
	}
	if len(o.Secrets) > 0 {
		if _, err := c.run(ctx, append([]string{"secret", "rm"}, o.Secrets...)...); err != nil {
			errs = append(errs, err)
		}
	}
	if err := errors.Join(errs...); err != nil {
		return err
	}
	// The manager drops a removed network from its lists a moment after `network rm` returns.
	for i := 0; ; i++ {
		left, err := c.List(ctx)
		if err != nil {
			return err
		}
		if left.Empty() {
			return nil
		}
		if i == 50 {
			return fmt.Errorf("still there after removal: %s", left)
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("still there after removal: %s", left)
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// waitContainersGone waits until no container of the project's tasks is left on this node
// (swarm removes them asynchronously after `service rm`).
func (c *Client) waitContainersGone(ctx context.Context) error {
	for {
		out, err := c.run(ctx, "ps", "-aq", "--filter", "label="+ProjectLabel+"="+c.Project, "--filter", "label=com.docker.swarm.service.id")
		if err == nil && strings.TrimSpace(out) == "" {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("containers of project %s still present after service rm: %s", c.Project, strings.Join(strings.Fields(out), " "))
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// removeNetwork retries for a few seconds: the overlay's endpoints on other nodes go a little
// after the tasks.
func (c *Client) removeNetwork(ctx context.Context, name string) error {
	var last error
	for i := 0; i < 25; i++ {
		out, err := c.run(ctx, "network", "rm", name)
		if err == nil || strings.Contains(out, "not found") || strings.Contains(out, "No such network") {
			return nil
		}
		last = err
		select {
		case <-ctx.Done():
			return last
		case <-time.After(200 * time.Millisecond):
		}
	}
	return last
}

// CleanupHint is the shell command that removes what a run of project may have left.
func CleanupHint(docker, project string) string {
	if docker == "" {
		docker = "docker"
	}
	f := "--filter label=" + ProjectLabel + "=" + project
	return fmt.Sprintf("%[1]s service rm $(%[1]s service ls -q %[2]s); %[1]s network rm $(%[1]s network ls -q %[2]s); %[1]s config rm $(%[1]s config ls -q %[2]s)", docker, f)
}
