// Package swarm drives protobench's stack on Docker Swarm through the docker CLI, the way
// internal/compose drives it through compose: the swarm's state and nodes, the project's overlay
// network, configs, long-lived services, run-once jobs (one-task services never restarted) and the
// removal of everything the project made. Services are translated from the compose services as
// `compose config` renders them (spec.go), so the compose file stays the one description of
// every container; a job's output comes back from whichever node ran it (transfer.go).
//
// Every object this package creates carries the label protobench.project=<project>, and
// RemoveAll removes by that label only: a user's own services, networks and configs on the same
// swarm are never touched.
package swarm

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os/exec"
	"sort"
	"strings"
)

// ProjectLabel is the label every object of a project carries.
const ProjectLabel = "protobench.project"

// RoleLabel is the node label that places the suite's services: server, client or monitor.
const RoleLabel = "protobench.role"

// Node roles as RoleLabel values.
const (
	RoleServer  = "server"
	RoleClient  = "client"
	RoleMonitor = "monitor"
)

// ErrNotManager says the docker CLI does not point at a swarm manager.
var ErrNotManager = errors.New("not a swarm manager")

// Client runs docker CLI commands against a swarm manager for one project.
type Client struct {
	Docker  string // the docker CLI
	Project string
}

// State is the local daemon's swarm membership.
type State struct {
	LocalNodeState   string // inactive, pending, active, error, locked
	ControlAvailable bool   // a manager
	NodeID           string
	Managers, Nodes  int
}

// New checks that docker answers and is an active swarm manager, and returns a client for
// project. The error for any other state says how to get one.
func New(ctx context.Context, docker, project string) (*Client, State, error) {
	if docker == "" {
		docker = "docker"
	}
	if project == "" {
		return nil, State{}, errors.New("swarm: empty project name")
	}
	c := &Client{Docker: docker, Project: project}
	st, err := c.State(ctx)
	if err != nil {
		return nil, st, err
	}
	switch {
	case st.LocalNodeState == "active" && st.ControlAvailable:
		return c, st, nil
	case st.LocalNodeState == "active":
		return nil, st, fmt.Errorf("%w: this daemon is a swarm worker; run protobench against a manager (DOCKER_HOST or --docker pointing at one)", ErrNotManager)
	case st.LocalNodeState == "inactive":
		return nil, st, fmt.Errorf("%w: this daemon is in no swarm; start a single-node one with `docker swarm init` (add --advertise-addr <ip> when it has several addresses), or join one with `docker swarm join`", ErrNotManager)
	}
	return nil, st, fmt.Errorf("%w: this daemon's swarm state is %q; `docker info` says more", ErrNotManager, st.LocalNodeState)
}

// State reads the local daemon's swarm state.
func (c *Client) State(ctx context.Context) (State, error) {
	out, err := c.run(ctx, "info", "--format", "{{json .Swarm}}")
	if err != nil {
		return State{}, fmt.Errorf("docker unreachable: %w", err)
	}
	var info struct {
		LocalNodeState   string
		ControlAvailable bool
		NodeID           string
		Managers, Nodes  int
	}
	if err := json.Unmarshal([]byte(out), &info); err != nil {
		return State{}, fmt.Errorf("docker info: %w", err)
	}
	return State(info), nil
}

// Node is one swarm node as `docker node inspect` describes it.
type Node struct {
	ID            string            `json:"id"`
	Hostname      string            `json:"hostname"`
	Role          string            `json:"role"` // manager or worker
	Availability  string            `json:"availability"`
	State         string            `json:"state"` // ready, down, ...
	Addr          string            `json:"addr"`
	Labels        map[string]string `json:"labels,omitempty"`
	Cores         int               `json:"cores"`
	MemoryBytes   int64             `json:"memory_bytes"`
	DockerVersion string            `json:"docker_version"`
	OS            string            `json:"os"`
	Arch          string            `json:"arch"`
	Self          bool              `json:"-"` // the node the docker CLI talks to
}

// Nodes lists the swarm's nodes, sorted by hostname.
func (c *Client) Nodes(ctx context.Context) ([]Node, error) {
	ids, err := c.run(ctx, "node", "ls", "-q")
	if err != nil {
		return nil, err
	}
	self, _ := c.run(ctx, "info", "--format", "{{.Swarm.NodeID}}")
	out, err := c.run(ctx, append([]string{"node", "inspect"}, strings.Fields(ids)...)...)
	if err != nil {
		return nil, err
	}
	var raw []struct {
		ID   string
		Spec struct {
			Labels       map[string]string
			Role         string
			Availability string
		}
		Description struct {
			Hostname  string
			Platform  struct{ Architecture, OS string }
			Resources struct {
				NanoCPUs    int64
				MemoryBytes int64
			}
			Engine struct{ EngineVersion string }
		}
		Status struct{ State, Addr string }
	}
	if err := json.Unmarshal([]byte(out), &raw); err != nil {
		return nil, fmt.Errorf("docker node inspect: %w", err)
	}
	nodes := make([]Node, 0, len(raw))
	for _, r := range raw {
		nodes = append(nodes, Node{
			ID: r.ID, Hostname: r.Description.Hostname, Role: r.Spec.Role, Availability: r.Spec.Availability,
			State: r.Status.State, Addr: r.Status.Addr, Labels: r.Spec.Labels,
			Cores: int(r.Description.Resources.NanoCPUs / 1e9), MemoryBytes: r.Description.Resources.MemoryBytes,
			DockerVersion: r.Description.Engine.EngineVersion, OS: r.Description.Platform.OS, Arch: r.Description.Platform.Architecture,
			Self: r.ID == strings.TrimSpace(self),
		})
	}
	sort.Slice(nodes, func(i, j int) bool { return nodes[i].Hostname < nodes[j].Hostname })
	return nodes, nil
}

// run runs the docker CLI and returns its stdout; an error carries the first line of stderr.
func (c *Client) run(ctx context.Context, args ...string) (string, error) {
	cmd := exec.CommandContext(ctx, c.Docker, args...)
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	if err := cmd.Run(); err != nil {
		msg := firstLine(errOut.String())
		if ctx.Err() != nil {
			msg = ctx.Err().Error()
		}
		name := strings.Join(args[:min(2, len(args))], " ")
		return errOut.String(), fmt.Errorf("docker %s: %s", name, msg)
	}
	return out.String(), nil
}

func firstLine(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		return s[:i]
	}
	return s
}

func shortID(id string) string {
	if len(id) > 12 {
		return id[:12]
	}
	return id
}

// sanitize keeps a name within what docker accepts for object names.
func sanitize(s string) string {
	var b strings.Builder
	for _, r := range s {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '-', r == '_', r == '.':
			b.WriteRune(r)
		default:
			b.WriteByte('_')
		}
	}
	return b.String()
}

// Output runs any docker CLI command and returns its stdout; an error carries stderr's first
// line.
func (c *Client) Output(ctx context.Context, args ...string) (string, error) {
	return c.run(ctx, args...)
}
