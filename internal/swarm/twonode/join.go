package twonode

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"time"
)

// Join joins the second node to the swarm this machine's daemon manages, as a worker. The
// manager must advertise the host end of the veth, or the node could not reach it.
func (c *Cluster) Join(ctx context.Context) error {
	out, err := c.run(ctx, "read the manager's swarm state", nil, c.docker, "info", "--format",
		"{{.Swarm.LocalNodeState}} {{.Swarm.ControlAvailable}} {{.Swarm.NodeAddr}} {{.Swarm.NodeID}}")
	if err != nil {
		return err
	}
	f := strings.Fields(out)
	if len(f) < 4 || f[0] != "active" || f[1] != "true" {
		return fmt.Errorf("twonode: this machine's daemon is not a swarm manager (docker info: %q)", out)
	}
	if f[2] != c.HostAddr {
		return fmt.Errorf("twonode: this machine's swarm advertises %s, but the second node reaches the host only at %s; the swarm must be initialised with --advertise-addr %s", f[2], c.HostAddr, c.HostAddr)
	}
	c.ManagerID = f[3]
	token, err := c.run(ctx, "read the worker join token", nil, c.docker, "swarm", "join-token", "--quiet", "worker")
	if err != nil {
		return err
	}
	c.logf("joining %s to the swarm at %s:2377", c.Hostname, c.HostAddr)
	if _, err := c.node(ctx, "swarm", "join", "--token", token, "--advertise-addr", c.NodeAddr, c.HostAddr+":2377"); err != nil {
		var se *StepError
		if errors.As(err, &se) {
			se.Step = "join the second node to the swarm"
			se.Cmd = strings.Replace(se.Cmd, token, "<token>", 1)
		}
		return err
	}
	c.done.joined = true
	if c.NodeID, err = c.node(ctx, "info", "--format", "{{.Swarm.NodeID}}"); err != nil {
		return err
	}
	// The manager lists the node as ready once its first heartbeat arrived over the veth.
	for i := 0; ; i++ {
		state, err := c.run(ctx, "read the second node's state", nil, c.docker, "node", "inspect", "--format", "{{.Status.State}}", c.NodeID)
		if err == nil && state == "ready" {
			c.logf("node %s (%s) ready", c.NodeID, c.Hostname)
			return nil
		}
		if i == 120 {
			return &StepError{Step: "wait for the second node to be ready", Cmd: c.docker + " node inspect " + c.NodeID,
				Err: errors.New("not ready after 60 s"), Output: state}
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(500 * time.Millisecond):
		}
	}
}

// Label adds the label key=value to a node (by ID or hostname), through the manager.
func (c *Cluster) Label(ctx context.Context, node, key, value string) error {
	_, err := c.run(ctx, "label node "+node, nil, c.docker, "node", "update", "--label-add", key+"="+value, node)
	return err
}

// Env is the environment in which the docker CLI talks to the second node.
func (c *Cluster) Env() []string { return append(os.Environ(), "DOCKER_HOST="+c.DockerHost) }

// Docker runs the docker CLI against the second node and returns its trimmed output.
func (c *Cluster) Docker(ctx context.Context, args ...string) (string, error) {
	return c.node(ctx, args...)
}

// LoadImages copies images from this machine's daemon to the second node, `docker save` piped
// into `docker load`, for tests that do not want a registry in the way.
func (c *Cluster) LoadImages(ctx context.Context, refs ...string) error {
	save := exec.CommandContext(ctx, c.docker, append([]string{"save"}, refs...)...)
	load := exec.CommandContext(ctx, c.docker, "load", "--quiet")
	load.Env = c.Env()
	var saveErr, loadOut bytes.Buffer
	save.Stderr = &saveErr
	load.Stdout, load.Stderr = &loadOut, &loadOut
	pipe, err := save.StdoutPipe()
	if err != nil {
		return err
	}
	load.Stdin = pipe
	cmdline := c.docker + " save " + strings.Join(refs, " ") + " | DOCKER_HOST=" + c.DockerHost + " " + c.docker + " load"
	if err := save.Start(); err != nil {
		return &StepError{Step: "copy images to the second node", Cmd: cmdline, Err: err}
	}
	lerr := load.Run()
	serr := save.Wait()
	if serr != nil {
		return &StepError{Step: "copy images to the second node", Cmd: cmdline, Err: serr, Output: strings.TrimSpace(saveErr.String())}
	}
	if lerr != nil {
		return &StepError{Step: "copy images to the second node", Cmd: cmdline, Err: lerr, Output: strings.TrimSpace(loadOut.String())}
	}
	c.logf("copied %s to %s", strings.Join(refs, ", "), c.Hostname)
	return nil
}
