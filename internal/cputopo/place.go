package cputopo

import (
	"fmt"
	"sort"
	"strings"
)

// Placement is where the server, the load tools and the observability stack go, and why.
type Placement struct {
	Server, Client, Observability []int
	// SMTShared: server and client share a physical core (its SMT siblings, or one CPU), since
	// the host has no two cores for them. MixedCores: they sit on cores of different kinds or
	// NUMA nodes, since no kind on one node has two cores for them.
	SMTShared, MixedCores bool
	Reason                string // one line a person can read: the topology and the choice
}

// core is one physical core: the CPUs of it Docker may use.
type core struct {
	id, node int
	kind     string
	cpus     []int
	threads  int
}

// Place gives the server and the load tools whole physical cores of one kind on one NUMA node,
// performance cores first; the client gets the larger half, since a load generator needs more
// CPU than the server it loads. The observability stack gets a core of its own where one is
// left, outside the chosen cores when there is one (an efficiency core, another node), else it
// shares the client's. Where the host has no two such cores it says so in Reason and sets
// MixedCores or SMTShared.
func Place(t *Topology) Placement {
	cores := coresOf(t)
	var p Placement
	switch {
	case len(t.CPUs) == 1:
		c := []int{t.CPUs[0].ID}
		p = Placement{Server: c, Client: c, Observability: c, SMTShared: true,
			Reason: "one CPU: server, tools and observability share it"}
	case len(cores) == 1:
		cpus := cores[0].cpus
		p = Placement{Server: cpus[:1], Client: cpus[1:], Observability: cpus[1:], SMTShared: true,
			Reason: fmt.Sprintf("one physical core (CPUs %s): server and client on its SMT siblings", FormatCPUs(cpus))}
	default:
		p = placeCores(cores)
	}
	p.Reason = t.Describe() + "; " + p.Reason
	return p
}

// placeCores places on a host of two or more physical cores.
func placeCores(cores []core) Placement {
	group, rest := bestGroup(cores)
	var p Placement
	var obs []core
	if len(group) < 2 {
		// No kind on one node has two cores: take the two best apart, performance first.
		sorted := append([]core(nil), cores...)
		sort.SliceStable(sorted, func(i, j int) bool {
			return sorted[i].kind != KindEfficiency && sorted[j].kind == KindEfficiency
		})
		group, rest = sorted[:2], sorted[2:]
		p.MixedCores = true
	}
	switch {
	case len(rest) > 0:
		obs = rest[len(rest)-1:]
	case len(group) >= 3:
		obs, group = group[len(group)-1:], group[:len(group)-1]
	}
	half := len(group) / 2
	server, client := group[:half], group[half:]
	p.Server, p.Client = cpusOf(server), cpusOf(client)
	p.Observability = p.Client
	if obs != nil {
		p.Observability = cpusOf(obs)
	}
	what := fmt.Sprintf("server on %s, client on %s, observability on %s", coreList(server), coreList(client), coreList(obs))
	if obs == nil {
		what = fmt.Sprintf("server on %s, client and observability on %s", coreList(server), coreList(client))
	}
	if p.MixedCores {
		p.Reason = what + fmt.Sprintf(": no kind of core on one NUMA node has two cores, so server (%s) and client (%s) differ", coreWhat(server[0]), coreWhat(client[0]))
	} else {
		p.Reason = what + ": whole physical cores, " + coreWhat(server[0])
	}
	return p
}

// bestGroup picks the cores of one kind on one node for server and client: a kind with two
// cores or more, performance before efficiency, then the node with the most such cores, then the
// lowest node. The rest are every other core, in order.
func bestGroup(cores []core) (group, rest []core) {
	type key struct {
		node int
		kind string
	}
	groups := map[key][]core{}
	var keys []key
	for _, c := range cores {
		k := key{c.node, c.kind}
		if groups[k] == nil {
			keys = append(keys, k)
		}
		groups[k] = append(groups[k], c)
	}
	sort.SliceStable(keys, func(i, j int) bool {
		a, b := keys[i], keys[j]
		aOK, bOK := len(groups[a]) >= 2, len(groups[b]) >= 2
		if aOK != bOK {
			return aOK
		}
		if (a.kind == KindEfficiency) != (b.kind == KindEfficiency) {
			return b.kind == KindEfficiency
		}
		if len(groups[a]) != len(groups[b]) {
			return len(groups[a]) > len(groups[b])
		}
		return a.node < b.node
	})
	best := keys[0]
	for _, c := range cores {
		if (key{c.node, c.kind}) != best {
			rest = append(rest, c)
		}
	}
	return groups[best], rest
}

// coresOf groups the topology's CPUs into physical cores, ordered by their lowest CPU.
func coresOf(t *Topology) []core {
	byID := map[int]*core{}
	var ids []int
	for _, c := range t.CPUs {
		k := byID[c.Core]
		if k == nil {
			k = &core{id: c.Core, node: c.Node, kind: c.Kind, threads: t.Threads[c.Core]}
			byID[c.Core] = k
			ids = append(ids, c.Core)
		}
		k.cpus = append(k.cpus, c.ID)
	}
	sort.Ints(ids)
	out := make([]core, len(ids))
	for i, id := range ids {
		out[i] = *byID[id]
		sort.Ints(out[i].cpus)
	}
	return out
}

func cpusOf(cores []core) []int {
	var out []int
	for _, c := range cores {
		out = append(out, c.cpus...)
	}
	sort.Ints(out)
	return out
}

// coreList names cores by their CPUs: "core 0 (CPUs 0,4)", "2 cores (CPUs 1-2,5-6)".
func coreList(cores []core) string {
	cpus := FormatCPUs(cpusOf(cores))
	if len(cores) == 1 {
		if len(cores[0].cpus) == 1 {
			return "CPU " + cpus
		}
		return "one core (CPUs " + cpus + ")"
	}
	return fmt.Sprintf("%d cores (CPUs %s)", len(cores), cpus)
}

func coreWhat(c core) string {
	kind := c.kind
	if kind == "" {
		kind = "one kind"
	}
	return fmt.Sprintf("%s, node %d", kind, c.node)
}

// Describe is the topology in one line: CPUs, physical cores and their threads, the SMT
// siblings, core kinds, NUMA nodes and Docker's cpuset.
func (t *Topology) Describe() string {
	cores := coresOf(t)
	var sib []string
	smt := false
	for _, c := range cores {
		if c.threads > 1 {
			smt = true
		}
		if len(c.cpus) > 1 {
			sib = append(sib, "("+strings.Trim(strings.Join(strings.Fields(fmt.Sprint(c.cpus)), ","), "[]")+")")
		}
	}
	parts := []string{fmt.Sprintf("%d CPUs on %d physical cores", len(t.CPUs), len(cores))}
	switch {
	case len(sib) > 0 && len(sib) <= 8:
		parts = append(parts, "SMT siblings "+strings.Join(sib, " "))
	case len(sib) > 8:
		parts = append(parts, fmt.Sprintf("SMT siblings %s … (%d pairs)", strings.Join(sib[:4], " "), len(sib)))
	case smt:
		parts = append(parts, "SMT siblings outside Docker's cpuset")
	default:
		parts = append(parts, "no SMT")
	}
	kinds := map[string][]int{}
	nodes := map[int]bool{}
	for _, c := range t.CPUs {
		kinds[c.Kind] = append(kinds[c.Kind], c.ID)
		nodes[c.Node] = true
	}
	if len(kinds) > 1 {
		parts = append(parts, fmt.Sprintf("performance CPUs %s, efficiency CPUs %s (from %s)",
			FormatCPUs(kinds[KindPerformance]), FormatCPUs(kinds[KindEfficiency]), t.KindsFrom))
	} else {
		parts = append(parts, "one kind of core")
	}
	parts = append(parts, fmt.Sprintf("%d NUMA node(s)", len(nodes)))
	if t.AllowedFrom != "" {
		parts = append(parts, fmt.Sprintf("Docker's cpuset %s (%s)", t.Allowed, t.AllowedFrom))
	}
	if t.Note != "" {
		parts = append(parts, t.Note)
	}
	return strings.Join(parts, ", ")
}

// Siblings returns, for CPUs a and b of distinct IDs, whether they are threads of one physical
// core (false on a nil topology: nothing is known).
func (t *Topology) Siblings(a, b int) bool {
	if t == nil {
		return false
	}
	ca, cb := -1, -2
	for _, c := range t.CPUs {
		if c.ID == a {
			ca = c.Core
		}
		if c.ID == b {
			cb = c.Core
		}
	}
	return a != b && ca == cb
}

// Mixed reports whether cpus span cores of more than one kind or NUMA node.
func (t *Topology) Mixed(cpus []int) bool {
	if t == nil {
		return false
	}
	in := map[int]bool{}
	for _, c := range cpus {
		in[c] = true
	}
	seen := map[string]bool{}
	for _, c := range t.CPUs {
		if in[c.ID] {
			seen[fmt.Sprintf("%s/%d", c.Kind, c.Node)] = true
		}
	}
	return len(seen) > 1
}

// Has reports whether CPU id is one the topology lets the containers use.
func (t *Topology) Has(id int) bool {
	for _, c := range t.CPUs {
		if c.ID == id {
			return true
		}
	}
	return false
}

// CPUList is every CPU of the topology in cpuset syntax.
func (t *Topology) CPUList() string {
	ids := make([]int, len(t.CPUs))
	for i, c := range t.CPUs {
		ids[i] = c.ID
	}
	return FormatCPUs(ids)
}
