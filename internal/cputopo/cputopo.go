// Package cputopo reads the host's CPU topology from sysfs (SMT siblings, physical cores, core
// kinds, NUMA nodes, the CPUs online and the cpuset Docker's cgroup allows) and places the server,
// the load tools and the observability stack on it. Everything is read under a root directory so
// that tests can point it at a copy of another machine's /sys.
package cputopo

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"sort"
	"strconv"
	"strings"
)

// Core kinds. A host with one kind of core leaves Kind empty on every CPU.
const (
	KindPerformance = "performance"
	KindEfficiency  = "efficiency"
)

// CPU is one logical CPU the containers may use.
type CPU struct {
	ID   int    `json:"id"`
	Core int    `json:"core"` // physical core, numbered by its lowest logical CPU
	Node int    `json:"node"` // NUMA node
	Kind string `json:"kind,omitempty"`
}

// Topology is what the layout needs to know of the host's CPUs.
type Topology struct {
	// CPUs are the online CPUs Docker's cgroup allows, by ID.
	CPUs []CPU `json:"cpus"`
	// Threads is how many logical CPUs each physical core has online (by Core), allowed or
	// not: a core whose sibling Docker may not use still shares its execution units with it.
	Threads map[int]int `json:"threads_per_core"`
	// Allowed is Docker's cpuset as read, and AllowedFrom the file it came from ("" when none
	// was readable: then every online CPU counts).
	Allowed     string `json:"docker_cpuset,omitempty"`
	AllowedFrom string `json:"docker_cpuset_from,omitempty"`
	KindsFrom   string `json:"kinds_from,omitempty"` // how core kinds were told apart
	// Source is the sysfs root read; Note says why none could be (then the topology is Flat).
	Source string `json:"source,omitempty"`
	Note   string `json:"note,omitempty"`
}

// Flat is what a CPU count alone says: n CPUs, each a core of its own, one kind, one node. It
// stands in where sysfs cannot be read (a CLI on macOS driving Docker Desktop's VM).
func Flat(n int, why string) *Topology {
	if n < 1 {
		n = 1
	}
	t := &Topology{Threads: map[int]int{}, Note: why}
	for i := 0; i < n; i++ {
		t.CPUs = append(t.CPUs, CPU{ID: i, Core: i})
		t.Threads[i] = 1
	}
	return t
}

// Host reads this machine's topology from /, or, where that fails, a Flat one of
// runtime.NumCPU() CPUs saying why.
func Host() *Topology {
	t, err := Read("/")
	if err != nil {
		return Flat(runtime.NumCPU(), fmt.Sprintf("sysfs unreadable (%v): each of the %d CPUs taken as a core of its own", err, runtime.NumCPU()))
	}
	return t
}

// Read reads the topology of the machine whose / is root.
func Read(root string) (*Topology, error) {
	cpuDir := filepath.Join(root, "sys/devices/system/cpu")
	online, err := readCPUList(filepath.Join(cpuDir, "online"))
	if err != nil {
		return nil, err
	}
	t := &Topology{Threads: map[int]int{}, Source: root}
	nodes := readNodes(root)
	kinds, kindsFrom := readKinds(root, online)
	t.KindsFrom = kindsFrom
	allowed := map[int]bool{}
	if list, from := readDockerCPUSet(root); from != "" {
		t.Allowed, t.AllowedFrom = FormatCPUs(list), from
		for _, c := range list {
			allowed[c] = true
		}
	}
	for _, id := range online {
		core := id
		if sib, err := readCPUList(filepath.Join(cpuDir, fmt.Sprintf("cpu%d/topology/thread_siblings_list", id))); err == nil && len(sib) > 0 {
			core = sib[0]
		}
		t.Threads[core]++
		if len(allowed) > 0 && !allowed[id] {
			continue
		}
		t.CPUs = append(t.CPUs, CPU{ID: id, Core: core, Node: nodes[id], Kind: kinds[id]})
	}
	if len(t.CPUs) == 0 {
		return nil, fmt.Errorf("no online CPU in Docker's cpuset %s (%s)", t.Allowed, t.AllowedFrom)
	}
	return t, nil
}

// readNodes maps each CPU to its NUMA node; a host without node directories is one node, 0.
func readNodes(root string) map[int]int {
	out := map[int]int{}
	dirs, _ := filepath.Glob(filepath.Join(root, "sys/devices/system/node/node[0-9]*"))
	for _, d := range dirs {
		n, err := strconv.Atoi(strings.TrimPrefix(filepath.Base(d), "node"))
		if err != nil {
			continue
		}
		cpus, err := readCPUList(filepath.Join(d, "cpulist"))
		if err != nil {
			continue
		}
		for _, c := range cpus {
			out[c] = n
		}
	}
	return out
}

// readKinds tells performance from efficiency cores: by the hybrid PMUs Intel's kernel driver
// lists (cpu_core, cpu_atom), else by cpu_capacity (ARM big.LITTLE), else by each CPU's top
// frequency. A CPU whose capacity or top frequency is below kindGap of the highest is an
// efficiency core; smaller differences (a preferred core that boosts a little higher) are one
// kind. Empty when the host has one kind.
func readKinds(root string, online []int) (map[int]string, string) {
	pcores, err1 := readCPUList(filepath.Join(root, "sys/devices/cpu_core/cpus"))
	ecores, err2 := readCPUList(filepath.Join(root, "sys/devices/cpu_atom/cpus"))
	if err1 == nil && err2 == nil && len(pcores) > 0 && len(ecores) > 0 {
		out := map[int]string{}
		for _, c := range pcores {
			out[c] = KindPerformance
		}
		for _, c := range ecores {
			out[c] = KindEfficiency
		}
		return out, "/sys/devices/cpu_core/cpus and /sys/devices/cpu_atom/cpus"
	}
	for _, src := range []string{"cpu_capacity", "cpufreq/cpuinfo_max_freq"} {
		vals := map[int]float64{}
		for _, c := range online {
			if v, err := readNumber(filepath.Join(root, fmt.Sprintf("sys/devices/system/cpu/cpu%d/%s", c, src))); err == nil && v > 0 {
				vals[c] = v
			}
		}
		if len(vals) != len(online) {
			continue
		}
		if out := splitByValue(vals); out != nil {
			return out, "/sys/devices/system/cpu/cpuN/" + src
		}
		return nil, ""
	}
	return nil, ""
}

// kindGap is the share below the highest capacity or top frequency from which a CPU counts as
// an efficiency core: Intel's E-cores top out about 25 % below the P-cores, ARM's little cores
// at half the capacity, while AMD's preferred cores differ from the rest by under 5 %.
const kindGap = 0.15

func splitByValue(vals map[int]float64) map[int]string {
	top := 0.0
	for _, v := range vals {
		top = max(top, v)
	}
	out := map[int]string{}
	mixed := false
	for c, v := range vals {
		out[c] = KindPerformance
		if v < (1-kindGap)*top {
			out[c], mixed = KindEfficiency, true
		}
	}
	if !mixed {
		return nil
	}
	return out
}

// readDockerCPUSet is the cpuset Docker's containers may use: the docker cgroup's under cgroup
// v1 (the cgroupfs driver) or the root's, and under cgroup v2 the effective cpuset of the
// parent Docker puts containers under (system.slice with systemd, docker with cgroupfs) or the
// root's. It returns the CPUs and the file read, or "" when none was readable.
func readDockerCPUSet(root string) ([]int, string) {
	for _, p := range []string{
		"sys/fs/cgroup/cpuset/docker/cpuset.effective_cpus",
		"sys/fs/cgroup/cpuset/docker/cpuset.cpus",
		"sys/fs/cgroup/cpuset/cpuset.effective_cpus",
		"sys/fs/cgroup/cpuset/cpuset.cpus",
		"sys/fs/cgroup/system.slice/cpuset.cpus.effective",
		"sys/fs/cgroup/docker/cpuset.cpus.effective",
		"sys/fs/cgroup/cpuset.cpus.effective",
	} {
		if cpus, err := readCPUList(filepath.Join(root, p)); err == nil && len(cpus) > 0 {
			return cpus, "/" + p
		}
	}
	return nil, ""
}

func readNumber(path string) (float64, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0, err
	}
	return strconv.ParseFloat(strings.TrimSpace(string(b)), 64)
}

func readCPUList(path string) ([]int, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	s := strings.TrimSpace(string(b))
	if s == "" {
		return nil, nil
	}
	cpus, err := ParseCPUs(s)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return cpus, nil
}

// ParseCPUs reads the kernel's and Docker's CPU list syntax ("0-3,8,10-11") into sorted CPU
// numbers.
func ParseCPUs(s string) ([]int, error) {
	seen := map[int]bool{}
	for _, part := range strings.Split(strings.TrimSpace(s), ",") {
		lo, hi, isRange := strings.Cut(strings.TrimSpace(part), "-")
		a, err := strconv.Atoi(lo)
		if err != nil || a < 0 || a > 4095 {
			return nil, fmt.Errorf("invalid CPU list %q", s)
		}
		b := a
		if isRange {
			if b, err = strconv.Atoi(hi); err != nil || b < a || b > 4095 {
				return nil, fmt.Errorf("invalid CPU list %q", s)
			}
		}
		for c := a; c <= b; c++ {
			seen[c] = true
		}
	}
	out := make([]int, 0, len(seen))
	for c := range seen {
		out = append(out, c)
	}
	sort.Ints(out)
	return out, nil
}

// FormatCPUs writes CPU numbers in Docker's cpuset syntax, runs as ranges: "0-2,5".
func FormatCPUs(cpus []int) string {
	s := append([]int(nil), cpus...)
	sort.Ints(s)
	var parts []string
	for i := 0; i < len(s); {
		j := i
		for j+1 < len(s) && s[j+1] == s[j]+1 {
			j++
		}
		switch {
		case j == i:
			parts = append(parts, strconv.Itoa(s[i]))
		default:
			parts = append(parts, fmt.Sprintf("%d-%d", s[i], s[j]))
		}
		i = j + 1
	}
	return strings.Join(parts, ",")
}
