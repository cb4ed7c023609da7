// Package nodeinfo records the machines and the network a swarm run used, for run.json: each
// node's hostname, role, labels, cores, memory, Docker version and platform from `docker node
// inspect`, its kernel and CPU model from node-exporter's series in Prometheus (a global service,
// so every node has one), and the project's overlay network from `docker network inspect`.
package nodeinfo

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os/exec"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/protobench/protobench/internal/prom"
)

// Options say where to look.
type Options struct {
	Docker        string // the docker CLI, talking to a swarm manager; "" is "docker"
	PrometheusURL string // the run's Prometheus, which scrapes node-exporter with a node label
	Network       string // the project's overlay network
}

// Swarm is what a run records about the swarm it ran on.
type Swarm struct {
	Nodes   []Node  `json:"nodes"`
	Network Network `json:"network"`
}

// Node is one swarm node. Kernel and CPUModel stay empty when Prometheus has no node-exporter
// series for the node (CPUModel needs node-exporter's --collector.cpu.info).
type Node struct {
	ID            string            `json:"id"`
	Hostname      string            `json:"hostname"`
	Role          string            `json:"role"` // manager or worker
	Labels        map[string]string `json:"labels,omitempty"`
	CPUModel      string            `json:"cpu_model"`
	Cores         int               `json:"cores"`
	MemoryBytes   int64             `json:"memory_bytes"`
	Kernel        string            `json:"kernel"`
	DockerVersion string            `json:"docker_version"`
	OS            string            `json:"os"`
	Arch          string            `json:"arch"`
}

// Network is the overlay the run's services talk over.
type Network struct {
	Name   string `json:"name"`
	Driver string `json:"driver"`
	// MTU is the MTU of a task's interface on the network, which is what TCP segments by.
	MTU    int    `json:"mtu"`
	Subnet string `json:"subnet"`
}

// Collect gathers the nodes and the network. A failing docker command is an error with nothing
// returned. A failing Prometheus query is an error too, but the Swarm then still holds everything
// docker told (only Kernel and CPUModel are missing), so a caller may record it anyway.
func Collect(ctx context.Context, o Options) (Swarm, error) {
	docker := o.Docker
	if docker == "" {
		docker = "docker"
	}
	ids, err := run(ctx, docker, "node", "ls", "--format", "{{.ID}}")
	if err != nil {
		return Swarm{}, err
	}
	inspect, err := run(ctx, docker, append([]string{"node", "inspect"}, strings.Fields(string(ids))...)...)
	if err != nil {
		return Swarm{}, err
	}
	nodes, err := ParseNodes(inspect)
	if err != nil {
		return Swarm{}, err
	}
	netJSON, err := run(ctx, docker, "network", "inspect", o.Network)
	if err != nil {
		return Swarm{}, err
	}
	network, err := ParseNetwork(netJSON)
	if err != nil {
		return Swarm{}, err
	}
	s := Swarm{Nodes: nodes, Network: network}
	if o.PrometheusURL == "" {
		return s, errors.New("nodeinfo: no Prometheus URL: kernel and CPU model unknown")
	}
	pc := prom.New(o.PrometheusURL)
	uname, err := pc.Query(ctx, `node_uname_info{job="node-exporter"}`, time.Time{})
	if err != nil {
		return s, fmt.Errorf("nodeinfo: kernel versions: %w", err)
	}
	cpu, err := pc.Query(ctx, `node_cpu_info{job="node-exporter"}`, time.Time{})
	if err != nil {
		return s, fmt.Errorf("nodeinfo: CPU models: %w", err)
	}
	AddExporterInfo(s.Nodes, uname, cpu)
	return s, nil
}

// nodeJSON is the part of `docker node inspect` that Collect reads.
type nodeJSON struct {
	ID   string
	Spec struct {
		Labels map[string]string
		Role   string
	}
	Description struct {
		Hostname string
		Platform struct {
			Architecture string
			OS           string
		}
		Resources struct {
			NanoCPUs    int64
			MemoryBytes int64
		}
		Engine struct {
			EngineVersion string
		}
	}
}

// ParseNodes reads `docker node inspect` output, sorted managers first, then by hostname, so that
// two records of the same swarm list the nodes in the same order.
func ParseNodes(b []byte) ([]Node, error) {
	var raw []nodeJSON
	if err := json.Unmarshal(b, &raw); err != nil {
		return nil, fmt.Errorf("nodeinfo: docker node inspect: %w", err)
	}
	if len(raw) == 0 {
		return nil, errors.New("nodeinfo: docker node inspect listed no nodes")
	}
	var nodes []Node
	for _, r := range raw {
		n := Node{
			ID:            r.ID,
			Hostname:      r.Description.Hostname,
			Role:          r.Spec.Role,
			Cores:         int(r.Description.Resources.NanoCPUs / 1e9),
			MemoryBytes:   r.Description.Resources.MemoryBytes,
			DockerVersion: r.Description.Engine.EngineVersion,
			OS:            r.Description.Platform.OS,
			Arch:          r.Description.Platform.Architecture,
		}
		if len(r.Spec.Labels) > 0 {
			n.Labels = r.Spec.Labels
		}
		nodes = append(nodes, n)
	}
	sort.SliceStable(nodes, func(i, j int) bool {
		if (nodes[i].Role == "manager") != (nodes[j].Role == "manager") {
			return nodes[i].Role == "manager"
		}
		if nodes[i].Hostname != nodes[j].Hostname {
			return nodes[i].Hostname < nodes[j].Hostname
		}
		return nodes[i].ID < nodes[j].ID
	})
	return nodes, nil
}

// networkJSON is the part of `docker network inspect` that Collect reads.
type networkJSON struct {
	Name    string
	Driver  string
	Options map[string]string
	IPAM    struct {
		Config []struct{ Subnet string }
	}
}

// Overlay (VXLAN) arithmetic, measured on Docker 20.10 by reading a task's /sys/class/net/eth0/mtu:
// no mtu option gives 1450, com.docker.network.driver.mtu=1400 gives 1350 and =1500 gives 1450,
// an encrypted overlay without the option 1424. The option is the underlay's MTU (dockerd's own
// "mtu" setting does not reach overlays); VXLAN takes 50 bytes of it and IPsec ESP 26 more.
const (
	mtuOption       = "com.docker.network.driver.mtu"
	defaultUnderlay = 1500
	vxlanOverhead   = 50
	espOverhead     = 26
)

// ParseNetwork reads `docker network inspect` output for one network.
func ParseNetwork(b []byte) (Network, error) {
	var raw []networkJSON
	if err := json.Unmarshal(b, &raw); err != nil {
		return Network{}, fmt.Errorf("nodeinfo: docker network inspect: %w", err)
	}
	if len(raw) != 1 {
		return Network{}, fmt.Errorf("nodeinfo: docker network inspect returned %d networks, want 1", len(raw))
	}
	r := raw[0]
	n := Network{Name: r.Name, Driver: r.Driver}
	var subnets []string
	for _, c := range r.IPAM.Config {
		if c.Subnet != "" {
			subnets = append(subnets, c.Subnet)
		}
	}
	n.Subnet = strings.Join(subnets, ",")
	mtu := 0
	if v, ok := r.Options[mtuOption]; ok {
		m, err := strconv.Atoi(v)
		if err != nil || m <= 0 {
			return Network{}, fmt.Errorf("nodeinfo: network %s: %s=%q is not an MTU", r.Name, mtuOption, v)
		}
		mtu = m
	}
	switch r.Driver {
	case "overlay":
		if mtu == 0 {
			mtu = defaultUnderlay
		}
		mtu -= vxlanOverhead
		if _, ok := r.Options["encrypted"]; ok {
			mtu -= espOverhead
		}
	default:
		// Other drivers give their interfaces the option's MTU as it is; without it, the
		// interface's MTU is not in the inspect output, and 0 says so.
	}
	n.MTU = mtu
	return n, nil
}

// AddExporterInfo fills Kernel and CPUModel from node-exporter's node_uname_info and node_cpu_info
// samples, matched to nodes by the `node` label (the swarm hostname Prometheus adds). A uname
// series without it is matched by its nodename, which is the node's hostname when the exporter's
// service runs with --hostname {{.Node.Hostname}}. Several distinct CPU models on one node are
// joined with " + ".
func AddExporterInfo(nodes []Node, uname, cpu []prom.Sample) {
	host := func(l map[string]string) string {
		if h := l["node"]; h != "" {
			return h
		}
		return l["nodename"]
	}
	kernel := map[string]string{}
	for _, s := range uname {
		if h := host(s.Labels); h != "" && s.Labels["release"] != "" {
			kernel[h] = s.Labels["release"]
		}
	}
	models := map[string]map[string]bool{}
	for _, s := range cpu {
		h, m := s.Labels["node"], strings.TrimSpace(s.Labels["model_name"])
		if h == "" || m == "" {
			continue
		}
		if models[h] == nil {
			models[h] = map[string]bool{}
		}
		models[h][m] = true
	}
	for i := range nodes {
		h := nodes[i].Hostname
		if k, ok := kernel[h]; ok {
			nodes[i].Kernel = k
		}
		var ms []string
		for m := range models[h] {
			ms = append(ms, m)
		}
		sort.Strings(ms)
		if len(ms) > 0 {
			nodes[i].CPUModel = strings.Join(ms, " + ")
		}
	}
}

func run(ctx context.Context, name string, args ...string) ([]byte, error) {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	var stderr bytes.Buffer
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("nodeinfo: %s %s: %w: %s", name, strings.Join(args, " "), err, strings.TrimSpace(stderr.String()))
	}
	return out, nil
}
