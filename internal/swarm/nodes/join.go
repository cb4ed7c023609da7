package nodes

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

// Join joins every node but the outsiders to the swarm this machine's daemon manages, as a
// worker, and waits until the manager lists each as ready. The manager must advertise the host's address on the LAN,
// or the nodes could not reach it.
func (c *Cluster) Join(ctx context.Context) error {
	out, err := c.run(ctx, "read the manager's swarm state", c.docker, "info", "--format",
		"{{.Swarm.LocalNodeState}} {{.Swarm.ControlAvailable}} {{.Swarm.NodeAddr}} {{.Swarm.NodeID}}")
	if err != nil {
		return err
	}
	f := strings.Fields(out)
	if len(f) < 4 || f[0] != "active" || f[1] != "true" {
		return fmt.Errorf("nodes: this machine's daemon is not a swarm manager (docker info: %q)", out)
	}
	if f[2] != c.HostAddr {
		return fmt.Errorf("nodes: this machine's swarm advertises %s, but the nodes reach the host only at %s; the swarm must be initialised with --advertise-addr %s", f[2], c.HostAddr, c.HostAddr)
	}
	c.ManagerID = f[3]
	token, err := c.run(ctx, "read the worker join token", c.docker, "swarm", "join-token", "--quiet", "worker")
	if err != nil {
		return err
	}
	for _, n := range c.Nodes {
		if n.Outsider {
			c.logf("%s stays out of the swarm: a neighbour on the LAN", n.Hostname)
			continue
		}
		if err := n.join(ctx, token); err != nil {
			return err
		}
	}
	return nil
}

func (n *Node) join(ctx context.Context, token string) error {
	c := n.c
	c.logf("joining %s to the swarm at %s:2377", n.Hostname, c.HostAddr)
	if _, err := n.docker(ctx, "swarm", "join", "--token", token, "--advertise-addr", n.Addr, c.HostAddr+":2377"); err != nil {
		var se *StepError
		if errors.As(err, &se) {
			se.Step = "join " + n.Hostname + " to the swarm"
			se.Cmd = strings.Replace(se.Cmd, token, "<token>", 1)
		}
		return err
	}
	n.done.joined = true
	var err error
	if n.NodeID, err = n.docker(ctx, "info", "--format", "{{.Swarm.NodeID}}"); err != nil {
		return err
	}
	// The manager lists the node as ready once its first heartbeat arrived over the LAN.
	for i := 0; ; i++ {
		state, err := c.run(ctx, "read the state of "+n.Hostname, c.docker, "node", "inspect", "--format", "{{.Status.State}}", n.NodeID)
		if err == nil && state == "ready" {
			c.logf("node %s (%s) ready", n.NodeID, n.Hostname)
			return nil
		}
		if i == 120 {
			return &StepError{Step: "wait for " + n.Hostname + " to be ready", Cmd: c.docker + " node inspect " + n.NodeID,
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
	_, err := c.run(ctx, "label node "+node, c.docker, "node", "update", "--label-add", key+"="+value, node)
	return err
}

// LoadImages copies images from this machine's daemon to every node (Node.LoadImages).
func (c *Cluster) LoadImages(ctx context.Context, refs ...string) error {
	for _, n := range c.Nodes {
		if err := n.LoadImages(ctx, refs...); err != nil {
			return err
		}
	}
	return nil
}

// Env is the environment in which the docker CLI talks to the node's daemon.
func (n *Node) Env() []string { return append(os.Environ(), "DOCKER_HOST="+n.DockerHost) }

// Docker runs the docker CLI against the node's daemon and returns its trimmed output.
func (n *Node) Docker(ctx context.Context, args ...string) (string, error) {
	return n.docker(ctx, args...)
}

// LoadImages copies images from this machine's daemon to the node, `docker save` piped into
// `docker load`, for tests that do not want a registry in the way.
func (n *Node) LoadImages(ctx context.Context, refs ...string) error {
	docker := n.c.docker
	save := exec.CommandContext(ctx, docker, append([]string{"save"}, refs...)...)
	load := exec.CommandContext(ctx, docker, "load", "--quiet")
	load.Env = n.Env()
	var saveErr, loadOut bytes.Buffer
	save.Stderr = &saveErr
	load.Stdout, load.Stderr = &loadOut, &loadOut
	pipe, err := save.StdoutPipe()
	if err != nil {
		return err
	}
	load.Stdin = pipe
	cmdline := docker + " save " + strings.Join(refs, " ") + " | DOCKER_HOST=" + n.DockerHost + " " + docker + " load"
	step := "copy images to " + n.Hostname
	if err := save.Start(); err != nil {
		return &StepError{Step: step, Cmd: cmdline, Err: err}
	}
	lerr := load.Run()
	serr := save.Wait()
	if serr != nil {
		return &StepError{Step: step, Cmd: cmdline, Err: serr, Output: strings.TrimSpace(saveErr.String())}
	}
	if lerr != nil {
		return &StepError{Step: step, Cmd: cmdline, Err: lerr, Output: strings.TrimSpace(loadOut.String())}
	}
	n.c.logf("copied %s to %s", strings.Join(refs, ", "), n.Hostname)
	return nil
}
