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
	"maps"
	"net"
	"os/exec"
	"sort"
	"strconv"
	"strings"
	"time"
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

// NetworkName is the project's overlay network.
func (c *Client) NetworkName() string { return c.Project + "-net" }

// ServiceName is the swarm service of a compose service: <project>-<service>.
func (c *Client) ServiceName(service string) string { return c.Project + "-" + service }

// EnsureNetwork creates the project's attachable overlay network unless it exists. Attachable,
// so a diagnosing user can `docker run --network` into it.
func (c *Client) EnsureNetwork(ctx context.Context) error {
	name := c.NetworkName()
	if out, err := c.run(ctx, "network", "inspect", "--format", `{{index .Labels "protobench.project"}}`, name); err == nil {
		if strings.TrimSpace(out) != c.Project {
			return fmt.Errorf("a network %s exists that is not project %s's (no %s=%s label): remove it or choose another --project", name, c.Project, ProjectLabel, c.Project)
		}
		return nil
	}
	_, err := c.run(ctx, c.networkCreateArgs(ctx)...)
	return err
}

// networkCreateArgs creates the project's network with the MTU of the interface this node
// advertises to the swarm, when docker says which that is.
func (c *Client) networkCreateArgs(ctx context.Context) []string {
	args := []string{"network", "create", "--driver", "overlay", "--attachable", "--label", ProjectLabel + "=" + c.Project}
	if addr, err := c.run(ctx, "info", "--format", "{{.Swarm.NodeAddr}}"); err == nil {
		if mtu := underlayMTU(net.ParseIP(strings.TrimSpace(addr))); mtu > 0 {
			args = append(args, "--opt", fmt.Sprintf("%s=%d", mtuOption, mtu))
		}
	}
	return append(args, c.NetworkName())
}

// mtuOption is the overlay driver's option for the MTU of the network under it; its tasks get 50
// bytes less (the VXLAN header).
const mtuOption = "com.docker.network.driver.mtu"

// underlayMTU is the MTU of the local interface that holds addr (the address this node
// advertises to the swarm, which VXLAN packets leave by), at most 1500, or 0 when no interface
// holds it. Without the option the overlay assumes 1500, which on a LAN of a smaller MTU (1400
// on the build machine's eth0) makes full-size packets too big for the path between hosts. The
// cap keeps a loopback advertise address (MTU 65536, a single node) at Ethernet's size, so a
// single node measures with the packet size two hosts would use.
func underlayMTU(addr net.IP) int {
	if addr == nil {
		return 0
	}
	ifaces, err := net.Interfaces()
	if err != nil {
		return 0
	}
	for _, ifc := range ifaces {
		addrs, err := ifc.Addrs()
		if err != nil {
			continue
		}
		for _, a := range addrs {
			if ipn, ok := a.(*net.IPNet); ok && ipn.IP.Equal(addr) {
				return min(ifc.MTU, 1500)
			}
		}
	}
	return 0
}

// Network is the project's overlay network as docker describes it.
type Network struct {
	Name   string `json:"name"`
	Driver string `json:"driver"`
	MTU    int    `json:"mtu"`
	Subnet string `json:"subnet"`
}

// InspectNetwork describes the project's overlay. Docker leaves the MTU option unset unless it
// was given, and the overlay driver then uses 1450 (1500 less the VXLAN header).
func (c *Client) InspectNetwork(ctx context.Context) (Network, error) {
	out, err := c.run(ctx, "network", "inspect", "--format", "{{json .}}", c.NetworkName())
	if err != nil {
		return Network{}, err
	}
	var raw struct {
		Name, Driver string
		Options      map[string]string
		IPAM         struct{ Config []struct{ Subnet string } }
	}
	if err := json.Unmarshal([]byte(out), &raw); err != nil {
		return Network{}, fmt.Errorf("docker network inspect: %w", err)
	}
	n := Network{Name: raw.Name, Driver: raw.Driver, MTU: 1450}
	if v := raw.Options["com.docker.network.driver.mtu"]; v != "" {
		fmt.Sscan(v, &n.MTU)
	}
	if len(raw.IPAM.Config) > 0 {
		n.Subnet = raw.IPAM.Config[0].Subnet
	}
	return n, nil
}

// CreateConfig stores data as a swarm config named <project>-<name>-<n>, labelled with the
// project, and returns its name. Configs are immutable, so every call makes a new one; swarm
// allows 64 characters in a name, so a long name is cut.
func (c *Client) CreateConfig(ctx context.Context, name string, data []byte) (string, error) {
	if len(data) > maxConfigBytes {
		return "", fmt.Errorf("config %s: %d bytes is more than a swarm config holds (%d)", name, len(data), maxConfigBytes)
	}
	full := c.configName(name, strconv.FormatInt(time.Now().UnixNano(), 36))
	cmd := exec.CommandContext(ctx, c.Docker, c.configCreateArgs(full)...)
	cmd.Stdin = bytes.NewReader(data)
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("docker config create %s: %v: %s", full, err, firstLine(errOut.String()))
	}
	return full, nil
}

// configName is the project's config name for name, made unique by suffix and cut to the 64
// characters swarm allows.
func (c *Client) configName(name, suffix string) string {
	suffix = "-" + suffix
	full := c.Project + "-" + sanitize(name)
	if len(full) > 64-len(suffix) {
		full = full[:64-len(suffix)]
	}
	return full + suffix
}

func (c *Client) configCreateArgs(full string) []string {
	return []string{"config", "create", "--label", ProjectLabel + "=" + c.Project, full, "-"}
}

// maxConfigBytes is swarm's limit on one config (500 KiB).
const maxConfigBytes = 500 * 1024

// RemoveConfigs removes configs by name; missing ones are no error.
func (c *Client) RemoveConfigs(ctx context.Context, names ...string) error {
	if len(names) == 0 {
		return nil
	}
	out, err := c.run(ctx, append([]string{"config", "rm"}, names...)...)
	if err != nil && !strings.Contains(out+err.Error(), "not found") {
		return err
	}
	return nil
}

// CreateService creates the service spec describes and returns its ID; it does not wait for
// its tasks.
func (c *Client) CreateService(ctx context.Context, spec ServiceSpec) (string, error) {
	out, err := c.run(ctx, c.owned(spec).CreateArgs()...)
	if err != nil {
		return "", err
	}
	return strings.TrimSpace(out), nil
}

// owned is spec with the project's label on the service and its containers, by which List and
// RemoveAll find everything of the project's.
func (c *Client) owned(spec ServiceSpec) ServiceSpec {
	withProject := func(m map[string]string) map[string]string {
		out := map[string]string{}
		maps.Copy(out, m)
		out[ProjectLabel] = c.Project
		return out
	}
	spec.Labels, spec.ContainerLabels = withProject(spec.Labels), withProject(spec.ContainerLabels)
	return spec
}

// StopService scales a replicated service to no tasks and waits until its task has stopped, on
// whichever node it ran: `service rm` alone returns while the container is still stopping, and
// a server still shutting down would share the node with the next run's.
func (c *Client) StopService(ctx context.Context, name string) error {
	if _, err := c.run(ctx, "service", "scale", "--detach", name+"=0"); err != nil {
		return err
	}
	// Scaled down, a task is marked for removal and leaves the list once its container has
	// stopped; a task that had ended already stays, terminal.
	for {
		tasks, err := c.Tasks(ctx, name)
		stopped := err == nil
		for _, t := range tasks {
			stopped = stopped && t.Terminal()
		}
		if stopped {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("service %s: its task has not stopped: %w", name, ctx.Err())
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// RemoveService removes a service (its tasks' containers go with it); a missing one is no error.
func (c *Client) RemoveService(ctx context.Context, name string) error {
	out, err := c.run(ctx, "service", "rm", name)
	if err != nil && !strings.Contains(out+err.Error(), "not found") {
		return err
	}
	return nil
}

// Task is one task of a service.
type Task struct {
	ID           string
	NodeID       string
	State        string // new ... running, complete, failed, shutdown, rejected, orphaned
	DesiredState string
	Message, Err string
	ContainerID  string
	ExitCode     int
	Timestamp    time.Time
}

// Terminal says whether a task has finished for good.
func (t Task) Terminal() bool {
	switch t.State {
	case "complete", "failed", "shutdown", "rejected", "orphaned", "remove":
		return true
	}
	return false
}

// Tasks lists a service's tasks, newest first.
func (c *Client) Tasks(ctx context.Context, service string) ([]Task, error) {
	ids, err := c.run(ctx, "service", "ps", "-q", "--no-trunc", service)
	if err != nil {
		return nil, err
	}
	if strings.TrimSpace(ids) == "" {
		return nil, nil
	}
	out, err := c.run(ctx, append([]string{"inspect", "--type", "task"}, strings.Fields(ids)...)...)
	if err != nil {
		return nil, err
	}
	var raw []struct {
		ID, NodeID, DesiredState string
		Status                   struct {
			Timestamp       time.Time
			State, Message  string
			Err             string
			ContainerStatus struct {
				ContainerID string
				ExitCode    int
			}
		}
	}
	if err := json.Unmarshal([]byte(out), &raw); err != nil {
		return nil, fmt.Errorf("docker inspect tasks of %s: %w", service, err)
	}
	tasks := make([]Task, 0, len(raw))
	for _, r := range raw {
		tasks = append(tasks, Task{
			ID: r.ID, NodeID: r.NodeID, State: r.Status.State, DesiredState: r.DesiredState,
			Message: r.Status.Message, Err: r.Status.Err, ContainerID: r.Status.ContainerStatus.ContainerID,
			ExitCode: r.Status.ContainerStatus.ExitCode, Timestamp: r.Status.Timestamp,
		})
	}
	sort.SliceStable(tasks, func(i, j int) bool { return tasks[i].Timestamp.After(tasks[j].Timestamp) })
	return tasks, nil
}

// WaitTask polls service's newest task until done says so, every 100 ms at first.
func (c *Client) WaitTask(ctx context.Context, service string, done func(Task) bool) (Task, error) {
	pause := 100 * time.Millisecond
	for {
		tasks, err := c.Tasks(ctx, service)
		if err != nil && ctx.Err() != nil {
			return Task{}, ctx.Err()
		}
		if err == nil && len(tasks) > 0 && done(tasks[0]) {
			return tasks[0], nil
		}
		select {
		case <-ctx.Done():
			if len(tasks) > 0 {
				return tasks[0], fmt.Errorf("service %s: task %s still %s: %w", service, shortID(tasks[0].ID), tasks[0].State, ctx.Err())
			}
			return Task{}, fmt.Errorf("service %s: no task yet: %w", service, ctx.Err())
		case <-time.After(pause):
		}
		if pause < 500*time.Millisecond {
			pause += 100 * time.Millisecond
		}
	}
}

// Running waits for service's task to run, and fails at once when it ended instead (with the
// swarm's reason: an image missing on the node, a constraint no node meets, ...).
func (c *Client) Running(ctx context.Context, service string) (Task, error) {
	t, err := c.WaitTask(ctx, service, func(t Task) bool { return t.State == "running" || t.Terminal() })
	if err != nil {
		if t.State == "pending" {
			return t, fmt.Errorf("%w (pending: %s; a placement constraint no node meets, or too little CPU or memory left on the nodes)", err, t.Err)
		}
		return t, err
	}
	if t.State != "running" {
		return t, fmt.Errorf("service %s: task %s %s before it ran: %s", service, shortID(t.ID), t.State, taskReason(t))
	}
	return t, nil
}

func taskReason(t Task) string {
	if t.Err != "" {
		return t.Err
	}
	return t.Message
}

// Logs returns a service's stdout and stderr as its tasks wrote them (--raw: no task prefix).
func (c *Client) Logs(ctx context.Context, service string) ([]byte, []byte, error) {
	cmd := exec.CommandContext(ctx, c.Docker, "service", "logs", "--raw", service)
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	if err := cmd.Run(); err != nil {
		return out.Bytes(), errOut.Bytes(), fmt.Errorf("docker service logs %s: %v: %s", service, err, firstLine(errOut.String()))
	}
	return out.Bytes(), errOut.Bytes(), nil
}

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
// the services' containers on this node to be gone, so the network can be removed.
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
