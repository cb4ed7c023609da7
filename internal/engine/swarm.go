package engine

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/protobench/protobench/internal/compose"
	"github.com/protobench/protobench/internal/prom"
	"github.com/protobench/protobench/internal/swarm"
	"github.com/protobench/protobench/internal/swarm/promconfig"
	"github.com/protobench/protobench/internal/targets"
)

// Swarm runs a scenario on Docker Swarm (--engine swarm). Every container is still made
// from its compose service as `compose config` renders it (the compose client renders, probes
// and inspects local containers); what changes is who starts it:
//   - Prometheus (with prometheus-swarm.yml as a swarm config), cAdvisor and node-exporter (one
//     per node, global) are services on the project's overlay network;
//   - a step's server is a one-task service, found by its compose name (dnsrr alias) as under
//     compose, placed on a node labelled protobench.role=server;
//   - a step's tool is a run-once job on a protobench.role=client node (one per client node
//     when the load is split), whose output comes back through its log (swarm/transfer.go).
//
// The compose client renders services and reads this node's containers; calls bounds every call.
type Swarm struct {
	c        *compose.Client
	calls    *calls
	sw       *swarm.Client
	place    placement
	repoRoot string
	log      func(format string, args ...any)

	rawDir        string   // the host's raw folder, where job outputs are written
	tlsDir        string   // the host's certificate folder of a TLS run, "" otherwise
	tls           swarmTLS // that folder's files for the servers and the tools, where compose mounts it
	promURL       string   // Prometheus as the host reaches it
	promPublished string   // set when Prometheus is published on another node
	promPassword  string   // that Prometheus' password (swarmprom.go)
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

	project string
	stdout  io.Writer
}

type swarmServer struct {
	name string // swarm service
	spec *compose.Service
	task swarm.Task
}

// runPlacement is where the current run's server and tool ran.
type runPlacement struct {
	server  string
	clients []string
	// partNodes are the client nodes of a split step's parts, in part order (part k ran on
	// partNodes[k-1]); nil when the tool ran as one job.
	partNodes  []string
	notes      []string
	gomaxprocs int // what the server's GOMAXPROCS was set to; 0 when it was not
}

// SwarmOptions configure the Swarm engine.
type SwarmOptions struct {
	Client   *compose.Client // renders the services; reads this node's containers
	Docker   string
	Project  string
	RepoRoot string
	Tracker  Tracker
	// GoServers are the compose services whose server is a Go program (our Go servers, and
	// custom targets with go_runtime: true): on swarm they get GOMAXPROCS from their CPU limit.
	GoServers map[string]bool
	Log       func(format string, args ...any) // warnings, as "protobench: ..." lines
	Stdout    io.Writer                        // progress: the placement, the registry
}

// NewSwarm checks the swarm and plans the placement.
func NewSwarm(ctx context.Context, o SwarmOptions) (*Swarm, error) {
	cctx, cancel := context.WithTimeout(ctx, CallTimeout)
	defer cancel()
	sw, _, err := swarm.New(cctx, o.Docker, o.Project)
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
	s := &Swarm{c: o.Client, calls: &calls{docker: o.Docker, tracker: o.Tracker}, sw: sw, place: p,
		repoRoot: o.RepoRoot, log: o.Log, goServers: o.GoServers, project: o.Project, stdout: o.Stdout,
		servers: map[string]*swarmServer{}, owners: map[string]string{}}
	fmt.Fprintf(o.Stdout, "protobench: swarm engine, %d node(s), placement %s\n", len(p.nodes), p.describe())
	return s, nil
}

// dropMount leaves out the bind mounts that have no place on a swarm node: folders of this
// checkout (Prometheus' file_sd targets and config, which a config replaces) and the results
// folder (the job transfer replaces it).
func (s *Swarm) dropMount(src, dst string) bool {
	if dst == rawMountPath || s.rawDir != "" && src == s.rawDir {
		return true
	}
	if dst == targets.TLSMount {
		return true // s.tls replaces it
	}
	if s.repoRoot != "" && (src == s.repoRoot || strings.HasPrefix(src, s.repoRoot+string(filepath.Separator))) {
		return true
	}
	return false
}

func (s *Swarm) from(service string, env map[string]string) swarm.FromCompose {
	return swarm.FromCompose{Name: s.sw.ServiceName(service), Project: s.sw.Project, Env: env,
		Network: s.sw.NetworkName(), DropMount: s.dropMount}
}

// Up creates the project's overlay network and the observability services, and waits for them
// to run. Grafana is not run on the swarm: its provisioning and dashboards are folders of this
// checkout, which another node does not have.
func (s *Swarm) Up(ctx context.Context, env map[string]string, services ...string) error {
	s.calls.base = s.calls.with(env)
	s.rawDir = env["PROTOBENCH_RAW_DIR"]
	s.tlsDir = env[targets.TLSDirEnv]
	s.calls.arm()
	return s.calls.bounded(ctx, upTimeout, func(ctx context.Context) error {
		if err := s.sw.EnsureNetwork(ctx); err != nil {
			return err
		}
		if err := s.shareCertificates(ctx); err != nil {
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
			s.calls.note(t.ContainerID, "service "+n)
		}
		return nil
	})
}

// observabilityService is the swarm service of Prometheus, cAdvisor or node-exporter.
// Prometheus' configuration becomes a swarm config through makeConfig, which returns its name.
func (s *Swarm) observabilityService(ctx context.Context, svc string, makeConfig func([]byte) (string, error)) (swarm.ServiceSpec, error) {
	cs, err := s.c.ServiceSpec(ctx, svc, s.calls.base)
	if err != nil {
		return swarm.ServiceSpec{}, err
	}
	o := s.from(svc, s.calls.base)
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
		return spec, s.publishPrometheus(ctx, &spec, s.place.monitors[0])
	}
	return spec, nil
}

// Locate finds Prometheus as the host reaches it. On this node a task has an address on
// docker_gwbridge, the host bridge through which overlay tasks reach the outside, and the host
// reaches that address directly (its overlay address it does not): no port is published.
func (s *Swarm) Locate(ctx context.Context) (string, string, error) {
	ctx, cancel := context.WithTimeout(ctx, CallTimeout)
	defer cancel()
	if s.promPublished != "" {
		s.promURL = s.promPublished
		return s.promURL, "", nil
	}
	t, err := s.sw.Running(ctx, s.sw.ServiceName("prometheus"))
	if err != nil {
		return "", "", fmt.Errorf("find Prometheus: %w", err)
	}
	ip, err := gwbridgeAddress(ctx, s.calls.docker, t.ContainerID)
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
func (s *Swarm) Down(ctx context.Context) error {
	err := s.sw.RemoveAll(ctx)
	if s.registryDone != nil {
		err = errors.Join(err, s.registryDone(ctx))
	}
	return err
}

func (s *Swarm) server(service string) (*swarmServer, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	srv, ok := s.servers[service]
	return srv, ok
}

// Recreate starts a fresh server: a one-task service on a server node, found by its compose
// name on the overlay (dnsrr, so no IPVS VIP is in the path), never restarted.
func (s *Swarm) Recreate(ctx context.Context, service string, env map[string]string) error {
	env = s.calls.with(env)
	return s.calls.bounded(ctx, recreateTimeout, func(ctx context.Context) error {
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
		s.calls.note(t.ContainerID, "server "+service)
		return err
	})
}

// serverService is the one-task service of a step's server, on a server node, found by its
// compose name on the overlay (dnsrr, so no IPVS VIP is in the path), never restarted.
func (s *Swarm) serverService(ctx context.Context, service string, env map[string]string) (*compose.Service, swarm.ServiceSpec, error) {
	cs, err := s.c.ServiceSpec(ctx, service, env)
	if err != nil {
		return nil, swarm.ServiceSpec{}, err
	}
	o := s.from(service, env)
	o.Role = s.place.constraint(swarm.RoleServer)
	o.Scrape, o.ScrapePort = "servers", metricsPort(cs)
	spec := swarm.Translate(cs, o)
	spec.DNSRR, spec.RestartNone, spec.NoHealthcheck = true, true, true
	s.tls.server(&spec)
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
// when its task runs on this node (as ComposeFast does), else until Prometheus scrapes its
// metrics, which a remote node's container serves only once it is up.
func (s *Swarm) WaitHealthy(ctx context.Context, service string, timeout time.Duration) error {
	srv, ok := s.server(service)
	if !ok {
		return fmt.Errorf("no service of %s was started", service)
	}
	local := srv.task.NodeID == s.place.self.ID
	probe := func(ctx context.Context) error {
		if local {
			return s.c.Probe(ctx, srv.task.ContainerID, srv.spec)
		}
		v, _, err := prom.New(s.promURL).Scalar(ctx, fmt.Sprintf(`max(up{job="servers",target=%q})`, service), time.Time{})
		if err == nil && v != 1 {
			err = fmt.Errorf("Prometheus cannot scrape %s on node %s yet", service, s.place.hostname(srv.task.NodeID))
		}
		return err
	}
	gone := func() error {
		if tasks, terr := s.sw.Tasks(ctx, srv.name); terr == nil && len(tasks) > 0 && tasks[0].Terminal() {
			t := tasks[0]
			b, _ := s.Logs(ctx, t.ContainerID)
			return fmt.Errorf("%s %s (exit code %d) before it was healthy; its log ends:\n    %s", service, t.State, t.ExitCode, strings.ReplaceAll(lastLines(b, 15), "\n", "\n    "))
		}
		return nil
	}
	return s.calls.probeUntilHealthy(ctx, service, timeout, probe, gone)
}

func (s *Swarm) ContainerID(ctx context.Context, service string) (string, error) {
	srv, ok := s.server(service)
	if !ok || srv.task.ContainerID == "" {
		return "", fmt.Errorf("no task of %s is running", service)
	}
	return srv.task.ContainerID, nil
}

// Remove stops the server's task and removes its service; it returns once the container has
// stopped, so the next run's server does not share the node with it.
func (s *Swarm) Remove(ctx context.Context, service string) error {
	srv, ok := s.server(service)
	if !ok {
		return nil
	}
	err := s.calls.bounded(ctx, removeTimeout, func(ctx context.Context) error {
		var stopErr error
		if srv.task.NodeID == s.place.self.ID && srv.task.ContainerID != "" {
			// On this node, as ComposeFast does: the run has read what it needs, and
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
func (s *Swarm) Inspect(ctx context.Context, id string) (ContainerState, error) {
	if st, err := s.calls.inspect(ctx, s.c, id); err == nil {
		return st, nil
	}
	s.mu.Lock()
	owner := s.owners[id]
	s.mu.Unlock()
	if owner == "" {
		return ContainerState{}, fmt.Errorf("container %.12s belongs to no service of this run", id)
	}
	var st ContainerState
	err := s.calls.bounded(ctx, CallTimeout, func(ctx context.Context) error {
		tasks, err := s.sw.Tasks(ctx, owner)
		if err != nil {
			return err
		}
		for _, t := range tasks {
			if t.ContainerID != id {
				continue
			}
			st = ContainerState{ID: id, Status: t.State, ExitCode: t.ExitCode}
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
func (s *Swarm) Logs(ctx context.Context, id string) ([]byte, error) {
	if b, err := s.calls.logs(ctx, s.c, id); err == nil {
		return b, nil
	}
	s.mu.Lock()
	owner := s.owners[id]
	s.mu.Unlock()
	if owner == "" {
		return nil, fmt.Errorf("container %.12s belongs to no service of this run", id)
	}
	var out []byte
	err := s.calls.bounded(ctx, CallTimeout, func(ctx context.Context) error {
		stdout, stderr, err := s.sw.Logs(ctx, owner)
		out = append(stdout, stderr...)
		return err
	})
	return out, err
}
