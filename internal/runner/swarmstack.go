package runner

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/protobench/protobench/internal/compose"
	"github.com/protobench/protobench/internal/prom"
	"github.com/protobench/protobench/internal/record"
	"github.com/protobench/protobench/internal/results"
	"github.com/protobench/protobench/internal/swarm"
	"github.com/protobench/protobench/internal/swarm/nodeinfo"
	"github.com/protobench/protobench/internal/swarm/promconfig"
)

// Engines a run can use.
const (
	EngineCompose = "compose"
	EngineSwarm   = "swarm"
)

// swarmStack runs a scenario on Docker Swarm (--engine swarm). Every container is still made
// from its compose service as `compose config` renders it (the compose client renders, probes
// and inspects local containers); what changes is who starts it:
//   - Prometheus (with prometheus-swarm.yml as a swarm config), cAdvisor and node-exporter (one
//     per node, global) are services on the project's overlay network;
//   - a step's server is a one-task service, found by its compose name (dnsrr alias) as under
//     compose, placed on a node labelled protobench.role=server;
//   - a step's tool is a run-once job on a protobench.role=client node (one per client node
//     when the load is split), whose output comes back through its log (swarm/transfer.go).
//
// It embeds the compose stack for the bounded calls, the environment and the daemon check; the
// compose stack's own Up/Down/Run are not used.
type swarmStack struct {
	*composeStack
	sw       *swarm.Client
	place    placement
	repoRoot string
	log      func(format string, args ...any)

	rawDir        string // the host's raw folder, where job outputs are written
	promURL       string // Prometheus as the host reaches it
	promPublished string // set when Prometheus is published on another node
	registryDone  func(context.Context) error
	// goServers are the compose services whose server is a Go program (our Go servers, and
	// custom targets with go_runtime: true): on swarm they get GOMAXPROCS from their CPU limit.
	goServers map[string]bool

	mu      sync.Mutex
	servers map[string]*swarmServer // by compose service
	owners  map[string]string       // container ID -> swarm service, for Inspect and Logs
	seq     int
	last    runPlacement
	nofile  int
}

type swarmServer struct {
	name string // swarm service
	spec *compose.Service
	task swarm.Task
}

// runPlacement is where the current run's server and tool ran.
type runPlacement struct {
	server     string
	clients    []string
	notes      []string
	gomaxprocs int // what the server's GOMAXPROCS was set to; 0 when it was not
}

// rawMountPath is where tools find raw/ in their containers, as under compose.
const rawMountPath = "/raw"

// placement assigns the suite's roles to nodes from their protobench.role labels.
type placement struct {
	nodes                      []swarm.Node
	self                       swarm.Node
	single                     bool // one node without role labels: everything runs there
	servers, clients, monitors []swarm.Node
}

// planPlacement reads the nodes' role labels. With no labels, a single node runs everything;
// several nodes must say which is which.
func planPlacement(nodes []swarm.Node) (placement, error) {
	p := placement{nodes: nodes}
	labelled := false
	for _, n := range nodes {
		if n.Self {
			p.self = n
		}
		if n.State != "" && n.State != "ready" || n.Availability != "" && n.Availability != "active" {
			continue
		}
		switch n.Labels[swarm.RoleLabel] {
		case swarm.RoleServer:
			p.servers = append(p.servers, n)
		case swarm.RoleClient:
			p.clients = append(p.clients, n)
		case swarm.RoleMonitor:
			p.monitors = append(p.monitors, n)
		}
		if n.Labels[swarm.RoleLabel] != "" {
			labelled = true
		}
	}
	if !labelled {
		if len(nodes) == 1 {
			p.single = true
			return p, nil
		}
		var b strings.Builder
		fmt.Fprintf(&b, "the swarm has %d nodes and none carries a %s label: say where servers and load tools run, e.g.\n", len(nodes), swarm.RoleLabel)
		for i, n := range nodes {
			role := swarm.RoleClient
			if i == 0 {
				role = swarm.RoleServer
			}
			fmt.Fprintf(&b, "  docker node update --label-add %s=%s %s\n", swarm.RoleLabel, role, n.Hostname)
		}
		b.WriteString("(and optionally protobench.role=monitor for Prometheus' node, a manager)")
		return p, errors.New(b.String())
	}
	var missing []string
	if len(p.servers) == 0 {
		missing = append(missing, swarm.RoleServer)
	}
	if len(p.clients) == 0 {
		missing = append(missing, swarm.RoleClient)
	}
	if len(missing) > 0 {
		return p, fmt.Errorf("no ready node is labelled %s=%s: add it with `docker node update --label-add %s=<role> <node>`",
			swarm.RoleLabel, strings.Join(missing, " or "), swarm.RoleLabel)
	}
	for _, m := range p.monitors {
		if m.Role != "manager" {
			return p, fmt.Errorf("node %s is labelled %s=%s but is a worker: Prometheus reads the swarm's task list, which only a manager answers", m.Hostname, swarm.RoleLabel, swarm.RoleMonitor)
		}
	}
	return p, nil
}

// constraint is the placement constraint of role, or "" on a single node.
func (p placement) constraint(role string) string {
	if p.single {
		return ""
	}
	return role
}

// hostname is the hostname of node id.
func (p placement) hostname(id string) string {
	for _, n := range p.nodes {
		if n.ID == id {
			return n.Hostname
		}
	}
	return id
}

// describe says where the roles run, for run.json.
func (p placement) describe() string {
	if p.single {
		return "single-node"
	}
	names := func(ns []swarm.Node) string {
		var out []string
		for _, n := range ns {
			out = append(out, n.Hostname)
		}
		return strings.Join(out, ",")
	}
	s := "servers=" + names(p.servers) + " clients=" + names(p.clients)
	if len(p.monitors) > 0 {
		s += " monitor=" + names(p.monitors)
	}
	return s
}

// newSwarmStack checks the swarm and plans the placement.
func newSwarmStack(ctx context.Context, cs *composeStack, project, repoRoot string, log func(string, ...any)) (*swarmStack, error) {
	cctx, cancel := context.WithTimeout(ctx, dockerCallTimeout)
	defer cancel()
	sw, _, err := swarm.New(cctx, cs.docker, project)
	if err != nil {
		return nil, err
	}
	nodes, err := sw.Nodes(cctx)
	if err != nil {
		return nil, err
	}
	p, err := planPlacement(nodes)
	if err != nil {
		return nil, err
	}
	return &swarmStack{composeStack: cs, sw: sw, place: p, repoRoot: repoRoot, log: log,
		servers: map[string]*swarmServer{}, owners: map[string]string{}}, nil
}

// dropMount leaves out the bind mounts that have no place on a swarm node: folders of this
// checkout (Prometheus' file_sd targets and config, which a config replaces) and the results
// folder (the job transfer replaces it).
func (s *swarmStack) dropMount(src, dst string) bool {
	if dst == rawMountPath || s.rawDir != "" && src == s.rawDir {
		return true
	}
	if s.repoRoot != "" && (src == s.repoRoot || strings.HasPrefix(src, s.repoRoot+string(filepath.Separator))) {
		return true
	}
	return false
}

func (s *swarmStack) from(service string, env map[string]string) swarm.FromCompose {
	return swarm.FromCompose{Name: s.sw.ServiceName(service), Project: s.sw.Project, Env: env,
		Network: s.sw.NetworkName(), DropMount: s.dropMount}
}

// Up creates the project's overlay network and the observability services, and waits for them
// to run. Grafana is not run on the swarm: its provisioning and dashboards are folders of this
// checkout, which another node does not have.
func (s *swarmStack) Up(ctx context.Context, env map[string]string, services ...string) error {
	s.base = s.with(env)
	s.rawDir = env["PROTOBENCH_RAW_DIR"]
	s.td.arm()
	return s.bounded(ctx, upTimeout, func(ctx context.Context) error {
		if err := s.sw.EnsureNetwork(ctx); err != nil {
			return err
		}
		var names []string
		for _, svc := range services {
			if svc == "grafana" {
				s.log("Grafana is not started on the swarm (its dashboards are files of this checkout); import dashboards/*.json into a Grafana of your own pointed at %s", "the run's Prometheus")
				continue
			}
			spec, err := s.observabilityService(ctx, svc, func(cfg []byte) (string, error) {
				return s.sw.CreateConfig(ctx, "prometheus", cfg)
			})
			if err != nil {
				return err
			}
			_ = s.sw.RemoveService(ctx, spec.Name) // a leftover of a killed run of this project
			if _, err := s.sw.CreateService(ctx, spec); err != nil {
				return fmt.Errorf("%s: %w", svc, err)
			}
			names = append(names, spec.Name)
		}
		for _, n := range names {
			t, err := s.sw.Running(ctx, n)
			if err != nil {
				return err
			}
			s.td.note(t.ContainerID, "service "+n)
		}
		return nil
	})
}

// observabilityService is the swarm service of Prometheus, cAdvisor or node-exporter.
// Prometheus' configuration becomes a swarm config through makeConfig, which returns its name.
func (s *swarmStack) observabilityService(ctx context.Context, svc string, makeConfig func([]byte) (string, error)) (swarm.ServiceSpec, error) {
	cs, err := s.c.ServiceSpec(ctx, svc, s.base)
	if err != nil {
		return swarm.ServiceSpec{}, err
	}
	o := s.from(svc, s.base)
	switch svc {
	case "cadvisor":
		o.Mode, o.Scrape, o.ScrapePort = swarm.ModeGlobal, "cadvisor", 8080
	case "node-exporter":
		o.Mode, o.Scrape, o.ScrapePort = swarm.ModeGlobal, "node-exporter", 9100
	case "prometheus":
		if len(s.place.monitors) > 0 {
			o.Role = swarm.RoleMonitor
		}
	}
	spec := swarm.Translate(cs, o)
	// Found by name through DNS round robin, as the servers are: through a service VIP (IPVS)
	// a job on this machine's overlay got "no route to host" to Prometheus, and k6's remote
	// write then spent 3 s on every flush after its load had ended.
	spec.DNSRR = true
	if svc != "prometheus" {
		return spec, nil
	}
	cfg, err := promconfig.Render(s.sw.Project, s.sw.NetworkName())
	if err != nil {
		return spec, err
	}
	name, err := makeConfig(cfg)
	if err != nil {
		return spec, err
	}
	spec.Configs = append(spec.Configs, swarm.ConfigMount{Config: name, Target: "/etc/prometheus/prometheus.yml"})
	// dockerswarm_sd asks the manager's API for the tasks, through the socket: root reads it.
	spec.Mounts = append(spec.Mounts, swarm.Mount{Source: "/var/run/docker.sock", Target: "/var/run/docker.sock", ReadOnly: true})
	spec.User = "0:0"
	spec.Constraints = append(spec.Constraints, "node.role==manager")
	if len(s.place.monitors) > 0 && !s.place.monitors[0].Self {
		// Prometheus on another machine: the runner reaches it on that node's address.
		port, _ := strconv.Atoi(portSetting("PROTOBENCH_PROMETHEUS_PORT", "9090"))
		spec.PublishHost = append(spec.PublishHost, swarm.PortMap{Published: port, Target: 9090})
		spec.Constraints = append(spec.Constraints, "node.id=="+s.place.monitors[0].ID)
		s.promPublished = fmt.Sprintf("http://%s:%d", s.place.monitors[0].Addr, port)
	}
	return spec, nil
}

// locate finds Prometheus as the host reaches it. On this node a task has an address on
// docker_gwbridge, the host bridge through which overlay tasks reach the outside, and the host
// reaches that address directly (its overlay address it does not): no port is published.
func (s *swarmStack) locate(ctx context.Context) (string, string, error) {
	ctx, cancel := context.WithTimeout(ctx, dockerCallTimeout)
	defer cancel()
	if s.promPublished != "" {
		s.promURL = s.promPublished
		return s.promURL, "", nil
	}
	t, err := s.sw.Running(ctx, s.sw.ServiceName("prometheus"))
	if err != nil {
		return "", "", fmt.Errorf("find Prometheus: %w", err)
	}
	ip, err := gwbridgeAddress(ctx, s.docker, t.ContainerID)
	if err != nil {
		return "", "", fmt.Errorf("find Prometheus: %w", err)
	}
	s.promURL = fmt.Sprintf("http://%s:9090", ip)
	return s.promURL, "", nil
}

// gwbridgeAddress is a local task container's address on docker_gwbridge.
func gwbridgeAddress(ctx context.Context, docker, containerID string) (string, error) {
	out, err := dockerOutput(ctx, docker, "network", "inspect", "--format", "{{json .Containers}}", "docker_gwbridge")
	if err != nil {
		return "", err
	}
	var eps map[string]struct {
		Name        string
		IPv4Address string
	}
	if err := json.Unmarshal([]byte(out), &eps); err != nil {
		return "", fmt.Errorf("docker network inspect docker_gwbridge: %w", err)
	}
	if ep, ok := eps[containerID]; ok && ep.IPv4Address != "" {
		ip, _, _ := strings.Cut(ep.IPv4Address, "/")
		return ip, nil
	}
	return "", fmt.Errorf("container %.12s has no address on docker_gwbridge", containerID)
}

func dockerOutput(ctx context.Context, docker string, args ...string) (string, error) {
	c := &swarm.Client{Docker: docker}
	return c.Output(ctx, args...)
}

// Down removes every service, network and config of the project, and the registry's images.
func (s *swarmStack) Down(ctx context.Context) error {
	err := s.sw.RemoveAll(ctx)
	if s.registryDone != nil {
		err = errors.Join(err, s.registryDone(ctx))
	}
	return err
}

func (s *swarmStack) server(service string) (*swarmServer, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	srv, ok := s.servers[service]
	return srv, ok
}

// Recreate starts a fresh server: a one-task service on a server node, found by its compose
// name on the overlay (dnsrr, so no IPVS VIP is in the path), never restarted.
func (s *swarmStack) Recreate(ctx context.Context, service string, env map[string]string) error {
	env = s.with(env)
	return s.bounded(ctx, recreateTimeout, func(ctx context.Context) error {
		cs, spec, err := s.serverService(ctx, service, env)
		if err != nil {
			return err
		}
		if old, ok := s.server(service); ok {
			_ = s.sw.RemoveService(ctx, old.name)
		}
		_ = s.sw.RemoveService(ctx, spec.Name)
		if _, err := s.sw.CreateService(ctx, spec); err != nil {
			return err
		}
		srv := &swarmServer{name: spec.Name, spec: cs}
		s.mu.Lock()
		s.servers[service] = srv
		s.mu.Unlock()
		t, err := s.sw.Running(ctx, spec.Name)
		s.mu.Lock()
		srv.task = t
		if t.ContainerID != "" {
			s.owners[t.ContainerID] = spec.Name
		}
		if t.NodeID != "" {
			s.last.server = s.place.hostname(t.NodeID)
		}
		s.last.gomaxprocs, _ = strconv.Atoi(spec.Env["GOMAXPROCS"])
		s.mu.Unlock()
		s.td.note(t.ContainerID, "server "+service)
		return err
	})
}

// serverService is the one-task service of a step's server, on a server node, found by its
// compose name on the overlay (dnsrr, so no IPVS VIP is in the path), never restarted.
func (s *swarmStack) serverService(ctx context.Context, service string, env map[string]string) (*compose.Service, swarm.ServiceSpec, error) {
	cs, err := s.c.ServiceSpec(ctx, service, env)
	if err != nil {
		return nil, swarm.ServiceSpec{}, err
	}
	o := s.from(service, env)
	o.Role = s.place.constraint(swarm.RoleServer)
	o.Scrape, o.ScrapePort = "servers", metricsPort(cs)
	spec := swarm.Translate(cs, o)
	spec.DNSRR, spec.RestartNone, spec.NoHealthcheck = true, true, true
	if s.goServers[service] {
		if n := GOMAXPROCSFor(spec.CPUs); n > 0 && spec.Env["GOMAXPROCS"] == "" {
			spec.Env["GOMAXPROCS"] = strconv.Itoa(n)
		}
	}
	return cs, spec, nil
}

// GOMAXPROCSFor is the GOMAXPROCS a Go server gets on an engine without cpusets: its CPU
// limit (docker's --cpus, a decimal number of cores) rounded up, or 0 when it has none. Go
// 1.25+ derives max(2, ceil(quota)) capped at the cores it sees, and without a cpuset it sees
// every core of the node: a server capped at 1 core ran 2 threads of Go code against a
// 1-core quota, and CFS throttled it at the headline step. At or below the quota it is not.
func GOMAXPROCSFor(cpus string) int {
	q, err := strconv.ParseFloat(strings.TrimSpace(cpus), 64)
	if err != nil || q <= 0 || math.IsInf(q, 0) {
		return 0
	}
	return int(math.Ceil(q - 1e-9))
}

// metricsPort is where a server serves /metrics: its PROTOBENCH_METRICS_LISTEN, 9100 otherwise.
func metricsPort(cs *compose.Service) int {
	if v := cs.Environment["PROTOBENCH_METRICS_LISTEN"]; v != nil {
		if i := strings.LastIndexByte(*v, ':'); i >= 0 {
			if p, err := strconv.Atoi((*v)[i+1:]); err == nil {
				return p
			}
		}
	}
	return 9100
}

// WaitHealthy probes the server until it passes: with its own health check through docker exec
// when its task runs on this node (as the fast path does), else until Prometheus scrapes its
// metrics, which a remote node's container serves only once it is up.
func (s *swarmStack) WaitHealthy(ctx context.Context, service string, timeout time.Duration) error {
	srv, ok := s.server(service)
	if !ok {
		return fmt.Errorf("no service of %s was started", service)
	}
	local := srv.task.NodeID == s.place.self.ID
	deadline := time.Now().Add(timeout)
	pause := 50 * time.Millisecond
	var last error
	for {
		err := s.bounded(ctx, dockerCallTimeout, func(ctx context.Context) error {
			if local {
				return s.c.Probe(ctx, srv.task.ContainerID, srv.spec)
			}
			v, _, err := prom.New(s.promURL).Scalar(ctx, fmt.Sprintf(`max(up{job="servers",target=%q})`, service), time.Time{})
			if err == nil && v != 1 {
				err = fmt.Errorf("Prometheus cannot scrape %s on node %s yet", service, s.place.hostname(srv.task.NodeID))
			}
			return err
		})
		if err == nil {
			return nil
		}
		last = err
		if lost := s.lost(); lost != nil {
			return lost
		}
		if tasks, terr := s.sw.Tasks(ctx, srv.name); terr == nil && len(tasks) > 0 && tasks[0].Terminal() {
			t := tasks[0]
			b, _ := s.Logs(ctx, t.ContainerID)
			return fmt.Errorf("%s %s (exit code %d) before it was healthy; its log ends:\n    %s", service, t.State, t.ExitCode, strings.ReplaceAll(lastLines(b, 15), "\n", "\n    "))
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

func lastLines(b []byte, n int) string {
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

func (s *swarmStack) ContainerID(ctx context.Context, service string) (string, error) {
	srv, ok := s.server(service)
	if !ok || srv.task.ContainerID == "" {
		return "", fmt.Errorf("no task of %s is running", service)
	}
	return srv.task.ContainerID, nil
}

// Remove stops the server's task and removes its service; it returns once the container has
// stopped, so the next run's server does not share the node with it.
func (s *swarmStack) Remove(ctx context.Context, service string) error {
	srv, ok := s.server(service)
	if !ok {
		return nil
	}
	err := s.bounded(ctx, removeTimeout, func(ctx context.Context) error {
		var stopErr error
		if srv.task.NodeID == s.place.self.ID && srv.task.ContainerID != "" {
			// On this node, as the fast path does: the run has read what it needs, and
			// killing the container is immediate, where scaling down waits for the swarm.
			stopErr = s.c.RemoveByID(ctx, srv.task.ContainerID)
		} else {
			stopErr = s.sw.StopService(ctx, srv.name)
		}
		return errors.Join(stopErr, s.sw.RemoveService(ctx, srv.name))
	})
	if err == nil {
		s.mu.Lock()
		delete(s.servers, service)
		s.mu.Unlock()
	}
	return err
}

// Inspect reads a server's container after its run: docker inspect when it is on this node
// (OOM kill, memory cap), else what its task says.
func (s *swarmStack) Inspect(ctx context.Context, id string) (compose.ContainerState, error) {
	if st, err := s.composeStack.Inspect(ctx, id); err == nil {
		return st, nil
	}
	s.mu.Lock()
	owner := s.owners[id]
	s.mu.Unlock()
	if owner == "" {
		return compose.ContainerState{}, fmt.Errorf("container %.12s belongs to no service of this run", id)
	}
	var st compose.ContainerState
	err := s.bounded(ctx, dockerCallTimeout, func(ctx context.Context) error {
		tasks, err := s.sw.Tasks(ctx, owner)
		if err != nil {
			return err
		}
		for _, t := range tasks {
			if t.ContainerID != id {
				continue
			}
			st = compose.ContainerState{ID: id, Status: t.State, ExitCode: t.ExitCode}
			if t.State == "complete" || t.State == "failed" {
				st.Status = "exited"
			}
			return nil
		}
		return fmt.Errorf("service %s has no task with container %.12s", owner, id)
	})
	return st, err
}

// Logs reads a server's log: docker logs on this node, the service's log otherwise.
func (s *swarmStack) Logs(ctx context.Context, id string) ([]byte, error) {
	if b, err := s.composeStack.Logs(ctx, id); err == nil {
		return b, nil
	}
	s.mu.Lock()
	owner := s.owners[id]
	s.mu.Unlock()
	if owner == "" {
		return nil, fmt.Errorf("container %.12s belongs to no service of this run", id)
	}
	var out []byte
	err := s.bounded(ctx, dockerCallTimeout, func(ctx context.Context) error {
		stdout, stderr, err := s.sw.Logs(ctx, owner)
		out = append(stdout, stderr...)
		return err
	})
	return out, err
}

// Run runs a tool as a run-once job (swarm.RunJob) on a client node, or, when several client nodes share a
// step that can be split, one job per client node with its part of the load; the parts' files
// are merged into the step's. The jobs' outputs are written into raw/ as a compose run's are.
func (s *swarmStack) Run(ctx context.Context, o OneOff) ([]byte, []byte, int, error) {
	env := s.with(o.Env)
	var stdout, stderr []byte
	code := -1
	err := s.bounded(ctx, o.Limit, func(ctx context.Context) error {
		jobs, merge, notes, err := s.toolJobs(ctx, o, env)
		if err != nil {
			return err
		}
		for _, j := range jobs {
			s.td.note(j.Spec.Name, "load tool "+o.Service)
		}
		res := make([]swarm.JobResult, len(jobs))
		errs := make([]error, len(jobs))
		var wg sync.WaitGroup
		for k := range jobs {
			wg.Add(1)
			go func(k int) {
				defer wg.Done()
				res[k], errs[k] = s.sw.RunJob(ctx, jobs[k])
			}(k)
		}
		wg.Wait()
		files := map[string][]byte{}
		var hosts []string
		code = 0
		for k, r := range res {
			if len(res) > 1 {
				head := fmt.Sprintf("=== part %d of %d on %s ===\n", k+1, len(res), s.place.hostname(r.Task.NodeID))
				stdout = append(append(stdout, head...), r.Stdout...)
				stderr = append(append(stderr, head...), r.Stderr...)
			} else {
				stdout, stderr = r.Stdout, r.Stderr
			}
			if r.ExitCode != 0 && code == 0 {
				code = r.ExitCode
			}
			if r.Task.NodeID != "" {
				hosts = append(hosts, s.place.hostname(r.Task.NodeID))
			}
			for name, b := range r.Files {
				files[filepath.Base(name)] = b
			}
			if o.Window != nil && !r.Started.IsZero() && !r.Ended.IsZero() {
				if o.Window[0].IsZero() || r.Started.Before(o.Window[0]) {
					o.Window[0] = r.Started
				}
				if r.Ended.After(o.Window[1]) {
					o.Window[1] = r.Ended
				}
			}
			if r.Nofile > 0 {
				s.mu.Lock()
				s.nofile = r.Nofile
				s.mu.Unlock()
			}
		}
		if err := errors.Join(errs...); err != nil {
			code = -1
			return err
		}
		if merge != nil {
			merged, err := merge(files)
			if err != nil {
				notes = append(notes, "merging the parts failed: "+err.Error())
			}
			for name, b := range merged {
				files[name] = b
			}
		}
		for name, b := range files {
			if err := results.WriteFileAtomic(filepath.Join(s.rawDir, name), b); err != nil {
				return fmt.Errorf("keep %s's %s: %w", o.Service, name, err)
			}
		}
		sort.Strings(hosts)
		s.mu.Lock()
		s.last.clients = hosts
		s.last.notes = append(s.last.notes, notes...)
		s.mu.Unlock()
		return nil
	})
	return stdout, stderr, code, err
}

// toolJobs are the run-once jobs of a tool's run: one on a client node, or, when several client
// nodes share a step that can be split, one per client node with its part of the load, whose
// files merge joins. notes say where the load ran when it could not be split.
func (s *swarmStack) toolJobs(ctx context.Context, o OneOff, env map[string]string) ([]swarm.Job, func(map[string][]byte) (map[string][]byte, error), []string, error) {
	cs, err := s.c.ServiceSpec(ctx, o.Service, env)
	if err != nil {
		return nil, nil, nil, err
	}
	inputs := map[string][]byte{}
	for _, name := range o.Inputs {
		b, err := os.ReadFile(filepath.Join(s.rawDir, filepath.Base(name)))
		if err != nil {
			return nil, nil, nil, fmt.Errorf("input %s: %w", name, err)
		}
		inputs[filepath.Base(name)] = b
	}
	clients := s.place.clients
	argv := [][]string{o.Args}
	var merge func(map[string][]byte) (map[string][]byte, error)
	var notes []string
	switch {
	case s.place.single:
		clients = []swarm.Node{s.place.self}
	case len(clients) > 1 && o.Parts != nil:
		parts, m, perr := o.Parts(len(clients))
		if perr != nil {
			notes = append(notes, fmt.Sprintf("ran on one of %d client nodes: %v", len(clients), perr))
			clients = clients[:1]
		} else {
			argv, merge = parts, m
			notes = append(notes, fmt.Sprintf("load split among %d client nodes, histograms merged", len(clients)))
		}
	case len(clients) > 1:
		notes = append(notes, fmt.Sprintf("ran on one of %d client nodes: %s cannot split its load", len(clients), o.Service))
		clients = clients[:1]
	}
	jobs := make([]swarm.Job, len(argv))
	for k := range argv {
		s.mu.Lock()
		s.seq++
		seq := s.seq
		s.mu.Unlock()
		f := s.from(o.Service, env)
		f.Name = fmt.Sprintf("%s-%d", o.Name, seq)
		f.Role = s.place.constraint(swarm.RoleClient)
		if o.Service == "loadgen" {
			f.Scrape, f.ScrapePort = "loadgen", 9102
		}
		spec := swarm.Translate(cs, f)
		if len(argv) > 1 {
			spec.Constraints = append(spec.Constraints, "node.id=="+clients[k].ID)
		}
		if o.Entrypoint != "" {
			spec.Entrypoint = []string{o.Entrypoint}
		}
		spec.Args = argv[k]
		spec.NoHealthcheck = true
		jobs[k] = swarm.Job{Spec: spec, RawDir: rawMountPath, Inputs: inputs}
	}
	return jobs, merge, notes, nil
}

// annotate adds where a run ran to its record, and resets for the next run.
func (s *swarmStack) annotate(rec *record.Record) {
	s.mu.Lock()
	last := s.last
	s.last = runPlacement{}
	s.mu.Unlock()
	rec.Engine = EngineSwarm
	if s.place.single {
		rec.Placement = "single-node"
		rec.Flags = appendFlag(rec.Flags, record.FlagSharedCores)
		rec.Notes = appendNote(rec.Notes, "single-node swarm: server and load tool share the node's cores (swarm has no cpuset; only the CPU quotas separate them)")
	} else {
		rec.Placement = fmt.Sprintf("server=%s client=%s", last.server, strings.Join(last.clients, ","))
		if last.server != "" && contains(last.clients, last.server) {
			rec.Flags = appendFlag(rec.Flags, record.FlagSharedCores)
		}
		rec.Notes = appendNote(rec.Notes, "swarm has no cpuset: the CPU quotas (cpus) are the only caps")
	}
	for _, n := range last.notes {
		rec.Notes = appendNote(rec.Notes, n)
	}
	rec.ServerGOMAXPROCSSet = last.gomaxprocs
}

func appendNote(notes []string, n string) []string {
	if contains(notes, n) {
		return notes
	}
	return append(notes, n)
}

func contains(xs []string, x string) bool {
	for _, y := range xs {
		if y == x {
			return true
		}
	}
	return false
}

// SwarmInfo is run.json's account of the swarm a run used.
type SwarmInfo struct {
	nodeinfo.Swarm
	Placement string `json:"placement"` // single-node, or the nodes of each role
	// TaskNofile is the open-files limit a tool's task had (the compose file's nofile ulimit,
	// which `docker service create --ulimit` passes on; the daemon's default where a CLI lacks
	// that flag).
	TaskNofile int      `json:"task_nofile,omitempty"`
	Notes      []string `json:"notes,omitempty"`
}

// describe fills run.json's swarm section. The nodes' kernel and CPU model come from
// node-exporter through Prometheus; when that fails, the rest is still recorded.
func (s *swarmStack) describe(ctx context.Context, info *RunInfo) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), dockerCallTimeout)
	defer cancel()
	sw, err := nodeinfo.Collect(ctx, nodeinfo.Options{Docker: s.docker, PrometheusURL: s.promURL, Network: s.sw.NetworkName()})
	si := &SwarmInfo{Swarm: sw, Placement: s.place.describe()}
	if err != nil {
		si.Notes = append(si.Notes, "node details incomplete: "+err.Error())
	}
	s.mu.Lock()
	si.TaskNofile = s.nofile
	s.mu.Unlock()
	si.Notes = append(si.Notes, "swarm services have no cpuset: client and server are separated by CPU quotas only, and by nodes when they are labelled apart")
	if si.TaskNofile > 0 && si.TaskNofile < 16384 {
		si.Notes = append(si.Notes, fmt.Sprintf("tool tasks could open only %d files: fewer than the 10,000 connections of the capacity test need", si.TaskNofile))
	}
	info.Engine = EngineSwarm
	info.Swarm = si
}

// swarmRemover is the teardown's view of the swarm: everything with the project's label.
type swarmRemover struct{ s *swarmStack }

func (r swarmRemover) Down(ctx context.Context) error        { return r.s.Down(ctx) }
func (r swarmRemover) ForceRemove(ctx context.Context) error { return r.s.sw.RemoveAll(ctx) }
func (r swarmRemover) ProjectContainers(ctx context.Context) ([]string, error) {
	o, err := r.s.sw.List(ctx)
	return o.Services, err
}
