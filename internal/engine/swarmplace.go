package engine

import (
	"errors"
	"fmt"
	"github.com/protobench/protobench/internal/swarm"
	"strings"
)

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
