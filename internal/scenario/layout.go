package scenario

import (
	"fmt"
	"sort"
	"strconv"
	"strings"
)

// Layout says which host CPUs the server, the load tools and the observability stack may use.
// Server and client sit on disjoint cpusets so that neither steals the other's cycles; the
// observability stack shares the client's side on small hosts because its load is light and a
// server core shared with Prometheus would bias the server's numbers.
type Layout struct {
	Cores               int    // host cores the layout was made for
	ServerCPUSet        string // Docker cpuset syntax: "0", "0-2", "0,2"
	ClientCPUSet        string
	ObservabilityCPUSet string
	Shared              bool // server and client overlap (one-core host or an override)
}

// AutoLayout splits cores the way the fairness rules ask:
//   - 1 core: everything on "0", marked Shared, because nothing else is possible;
//   - 2 cores: server "0", client and observability "1";
//   - 3 or more: observability gets the last core, and the rest is split with the client
//     getting the larger half, since a load generator needs more CPU than the server it loads.
func AutoLayout(cores int) Layout {
	switch {
	case cores <= 1:
		return Layout{Cores: 1, ServerCPUSet: "0", ClientCPUSet: "0", ObservabilityCPUSet: "0", Shared: true}
	case cores == 2:
		return Layout{Cores: 2, ServerCPUSet: "0", ClientCPUSet: "1", ObservabilityCPUSet: "1"}
	}
	rest := cores - 1
	server := rest / 2
	return Layout{
		Cores:               cores,
		ServerCPUSet:        cpuRange(0, server-1),
		ClientCPUSet:        cpuRange(server, rest-1),
		ObservabilityCPUSet: strconv.Itoa(cores - 1),
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

// resolveLayout applies the scenario's overrides to the automatic layout for cores.
func resolveLayout(sc *Scenario, cores int) (Layout, error) {
	l := AutoLayout(cores)
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
		if last := cpus[len(cpus)-1]; last >= l.Cores {
			c.add(sc.Layout.lines[field], "layout."+field, "cpu %d does not exist on this %d-core host", last, l.Cores)
			return
		}
		*dst = value
	}
	override(&l.ServerCPUSet, sc.Layout.ServerCPUSet, "server_cpuset")
	override(&l.ClientCPUSet, sc.Layout.ClientCPUSet, "client_cpuset")
	override(&l.ObservabilityCPUSet, sc.Layout.ObservabilityCPUSet, "observability_cpuset")
	if err := c.err(); err != nil {
		return Layout{}, err
	}
	server, _ := ParseCPUSet(l.ServerCPUSet)
	client, _ := ParseCPUSet(l.ClientCPUSet)
	in := map[int]bool{}
	for _, s := range server {
		in[s] = true
	}
	l.Shared = false
	for _, cl := range client {
		if in[cl] {
			l.Shared = true
		}
	}
	return l, nil
}
