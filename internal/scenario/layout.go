package scenario

import (
	"fmt"

	"github.com/protobench/protobench/internal/cputopo"
	"github.com/protobench/protobench/internal/record"
	"sort"
	"strconv"
	"strings"
)

// Layout says which host CPUs the server, the load tools and the observability stack may use.
// Server and client sit on disjoint cpusets so that neither steals the other's cycles; the
// observability stack shares the client's side on small hosts because its load is light and a
// server core shared with Prometheus would bias the server's numbers.
type Layout struct {
	Cores               int    // host CPUs the layout was made for (the highest CPU number + 1)
	ServerCPUSet        string // Docker cpuset syntax: "0", "0-2", "0,2"
	ClientCPUSet        string
	ObservabilityCPUSet string
	Shared              bool // server and client overlap (one-core host or an override)
	// Reason is the topology and the choice in one line a person can read; Flags are the
	// record flags every run of this layout carries (smt-shared, mixed-cores); Forced says
	// --force-layout kept an override that puts server and client on one physical core.
	Reason   string            `json:",omitempty"`
	Flags    []string          `json:",omitempty"`
	Forced   bool              `json:",omitempty"`
	Topology *cputopo.Topology `json:",omitempty"`
}

// AutoLayout places server, client and observability on the host topology t
// (cputopo.Place): whole physical cores of one kind on one NUMA node for server and client,
// the client the larger half, the observability stack a core of its own where one is left.
// On a host with no SMT, one kind of core and one node (cputopo.Flat(n)) that is:
//   - 1 core: everything on "0", marked Shared, because nothing else is possible;
//   - 2 cores: server "0", client and observability "1";
//   - 3 or more: observability gets the last core, and the rest is split with the client
//     getting the larger half, since a load generator needs more CPU than the server it loads.
func AutoLayout(t *cputopo.Topology) Layout {
	p := cputopo.Place(t)
	l := Layout{
		Cores:               maxCPU(t) + 1,
		ServerCPUSet:        cputopo.FormatCPUs(p.Server),
		ClientCPUSet:        cputopo.FormatCPUs(p.Client),
		ObservabilityCPUSet: cputopo.FormatCPUs(p.Observability),
		Reason:              p.Reason,
		Topology:            t,
	}
	l.judge()
	return l
}

// FromHost says the layout was made on a topology read from a host (or one that says why it
// could not be), not on a bare CPU count: only then is its Reason worth printing.
func (l Layout) FromHost() bool {
	return l.Reason != "" && l.Topology != nil && (l.Topology.Source != "" || l.Topology.Note != "")
}

func maxCPU(t *cputopo.Topology) int {
	m := 0
	for _, c := range t.CPUs {
		m = max(m, c.ID)
	}
	return m
}

// judge sets Shared and Flags from the cpusets as they are, automatic or overridden: server and
// client on one physical core (the same CPU or its SMT siblings) is smt-shared, on cores of
// different kinds or NUMA nodes mixed-cores.
func (l *Layout) judge() {
	server, _ := ParseCPUSet(l.ServerCPUSet)
	client, _ := ParseCPUSet(l.ClientCPUSet)
	l.Shared, l.Flags = false, nil
	smt := false
	for _, s := range server {
		for _, c := range client {
			l.Shared = l.Shared || s == c
			smt = smt || s == c || l.Topology.Siblings(s, c)
		}
	}
	if smt {
		l.Flags = append(l.Flags, record.FlagSMTShared)
	}
	if l.Topology.Mixed(append(server, client...)) {
		l.Flags = append(l.Flags, record.FlagMixedCores)
	}
}

// StackCPUSet is where the observability stack should sit while a step runs. Where it has a core
// of its own, or the layout is shared, that is ObservabilityCPUSet. Where it shares the client's
// cores (two cores), it follows the slack: a tool that spends more CPU per request than the
// server it loads (clientBound) fills its own core long before the server's is full, so the
// stack's CPU taken from the client's core comes straight out of the measurement, while the
// server's core has room for it. Any other tool leaves the stack on the client's side, where a
// saturated server would otherwise lose it.
func (l Layout) StackCPUSet(clientBound bool) string {
	if !clientBound || l.Shared || l.ObservabilityCPUSet != l.ClientCPUSet || l.ServerCPUSet == "" {
		return l.ObservabilityCPUSet
	}
	return l.ServerCPUSet
}

// StackNote says, for a listing of the layout, where the stack goes during a client-bound tool's
// runs when that is not ObservabilityCPUSet; empty otherwise.
func (l Layout) StackNote() string {
	if at := l.StackCPUSet(true); at != l.ObservabilityCPUSet {
		return fmt.Sprintf(" (cpuset %s while a client-bound tool runs: its own core is full, the server's has room)", at)
	}
	return ""
}

func cpuRange(lo, hi int) string {
	if lo == hi {
		return strconv.Itoa(lo)
	}
	return fmt.Sprintf("%d-%d", lo, hi)
}

// ParseCPUSet reads Docker's cpuset syntax into the sorted list of CPU numbers.
func ParseCPUSet(s string) ([]int, error) {
	seen := map[int]bool{}
	for _, part := range strings.Split(strings.TrimSpace(s), ",") {
		lo, hi, isRange := strings.Cut(strings.TrimSpace(part), "-")
		a, err := strconv.Atoi(lo)
		if err != nil || a < 0 || a > 4095 {
			return nil, fmt.Errorf("invalid cpuset %q", s)
		}
		b := a
		if isRange {
			if b, err = strconv.Atoi(hi); err != nil || b < a || b > 4095 {
				return nil, fmt.Errorf("invalid cpuset %q", s)
			}
		}
		for c := a; c <= b; c++ {
			seen[c] = true
		}
	}
	cpus := make([]int, 0, len(seen))
	for c := range seen {
		cpus = append(cpus, c)
	}
	sort.Ints(cpus)
	return cpus, nil
}

// cpuCount is the number of CPUs in a valid cpuset.
func cpuCount(s string) int {
	cpus, err := ParseCPUSet(s)
	if err != nil {
		return 0
	}
	return len(cpus)
}

// resolveLayout applies the scenario's overrides to the automatic layout for the host topology
// t. An override that puts server and client on SMT siblings of one physical core is refused at
// its line, naming the siblings, unless force (--force-layout) keeps it: then every record is
// flagged smt-shared.
func resolveLayout(sc *Scenario, t *cputopo.Topology, force bool) (Layout, error) {
	l := AutoLayout(t)
	c := &collector{file: sc.Path}
	override := func(dst *string, value, field string) {
		if value == "" {
			return
		}
		cpus, err := ParseCPUSet(value)
		if err != nil {
			c.add(sc.Layout.lines[field], "layout."+field, "expected a cpuset such as 0 or 0-3, got %q", value)
			return
		}
		for _, cpu := range cpus {
			if !t.Has(cpu) {
				c.add(sc.Layout.lines[field], "layout."+field, "cpu %d does not exist on this %d-core host (the CPUs Docker may use here are %s)", cpu, len(t.CPUs), t.CPUList())
				return
			}
		}
		*dst = value
	}
	override(&l.ServerCPUSet, sc.Layout.ServerCPUSet, "server_cpuset")
	override(&l.ClientCPUSet, sc.Layout.ClientCPUSet, "client_cpuset")
	override(&l.ObservabilityCPUSet, sc.Layout.ObservabilityCPUSet, "observability_cpuset")
	if err := c.err(); err != nil {
		return Layout{}, err
	}
	if sc.Layout.ServerCPUSet == "" && sc.Layout.ClientCPUSet == "" && sc.Layout.ObservabilityCPUSet == "" {
		return l, nil
	}
	l.Reason = fmt.Sprintf("%s; overridden by the scenario: server %s, client %s, observability %s",
		t.Describe(), l.ServerCPUSet, l.ClientCPUSet, l.ObservabilityCPUSet)
	if pair := siblingPair(t, l.ServerCPUSet, l.ClientCPUSet); pair != "" {
		if !force {
			field := "client_cpuset"
			if sc.Layout.ClientCPUSet == "" {
				field = "server_cpuset"
			}
			c.add(sc.Layout.lines[field], "layout."+field, "%s: server and client would share a physical core; give each whole cores of its own, or run with --force-layout to keep it (every record is then flagged %s)", pair, record.FlagSMTShared)
			return Layout{}, c.err()
		}
		l.Forced = true
		l.Reason += "; kept by --force-layout although " + pair
	}
	l.judge()
	return l, nil
}

// siblingPair names the first server CPU and client CPU that are SMT siblings of one physical
// core, or "" when none are.
func siblingPair(t *cputopo.Topology, server, client string) string {
	ss, _ := ParseCPUSet(server)
	cs, _ := ParseCPUSet(client)
	for _, s := range ss {
		for _, c := range cs {
			if t.Siblings(s, c) {
				return fmt.Sprintf("server CPU %d and client CPU %d are SMT siblings of one physical core", s, c)
			}
		}
	}
	return ""
}
