package cputopo

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// sysfs builds a host's sysfs tree under a temporary root, the files the layout reads and
// nothing else.
type sysfs struct {
	t    *testing.T
	root string
}

func newSysfs(t *testing.T, online string) *sysfs {
	s := &sysfs{t: t, root: t.TempDir()}
	s.write("sys/devices/system/cpu/online", online)
	return s
}

func (s *sysfs) write(path, content string) *sysfs {
	p := filepath.Join(s.root, path)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		s.t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(content+"\n"), 0o644); err != nil {
		s.t.Fatal(err)
	}
	return s
}

// siblings writes each CPU's thread_siblings_list: cores lists the CPUs of each physical core.
func (s *sysfs) siblings(cores ...[]int) *sysfs {
	for i, c := range cores {
		for _, cpu := range c {
			dir := fmt.Sprintf("sys/devices/system/cpu/cpu%d/topology/", cpu)
			s.write(dir+"thread_siblings_list", FormatCPUs(c))
			s.write(dir+"core_id", fmt.Sprint(i))
			s.write(dir+"physical_package_id", "0")
		}
	}
	return s
}

func (s *sysfs) node(n int, cpus string) *sysfs {
	return s.write(fmt.Sprintf("sys/devices/system/node/node%d/cpulist", n), cpus)
}

func (s *sysfs) read() *Topology {
	t, err := Read(s.root)
	if err != nil {
		s.t.Fatal(err)
	}
	return t
}

func pairs(n, offset int) [][]int {
	var out [][]int
	for i := 0; i < n; i++ {
		out = append(out, []int{i, i + offset})
	}
	return out
}

func singles(from, to int) [][]int {
	var out [][]int
	for i := from; i <= to; i++ {
		out = append(out, []int{i})
	}
	return out
}

// checkApart fails when server and client share a physical core, when either is empty, or when
// any placement uses a CPU the topology does not allow.
func checkApart(t *testing.T, topo *Topology, p Placement) {
	t.Helper()
	if len(p.Server) == 0 || len(p.Client) == 0 || len(p.Observability) == 0 {
		t.Fatalf("empty cpuset: %+v", p)
	}
	coreOf := map[int]int{}
	for _, c := range topo.CPUs {
		coreOf[c.ID] = c.Core
	}
	for _, set := range [][]int{p.Server, p.Client, p.Observability} {
		for _, c := range set {
			if _, ok := coreOf[c]; !ok {
				t.Errorf("CPU %d is not in the topology's CPUs %s", c, topo.CPUList())
			}
		}
	}
	for _, s := range p.Server {
		for _, c := range p.Client {
			if coreOf[s] == coreOf[c] {
				t.Errorf("server CPU %d and client CPU %d share physical core %d: %s", s, c, coreOf[s], p.Reason)
			}
		}
	}
	if p.SMTShared {
		t.Errorf("flagged smt-shared on a host that has cores apart: %s", p.Reason)
	}
}

func kinds(topo *Topology, cpus []int) map[string]bool {
	out := map[string]bool{}
	for _, c := range topo.CPUs {
		for _, x := range cpus {
			if c.ID == x {
				out[c.Kind+fmt.Sprintf("/node%d", c.Node)] = true
			}
		}
	}
	return out
}

// checkOneKind fails unless server and client sit on cores of one kind on one node.
func checkOneKind(t *testing.T, topo *Topology, p Placement) {
	t.Helper()
	k := kinds(topo, append(append([]int{}, p.Server...), p.Client...))
	if len(k) != 1 || p.MixedCores {
		t.Errorf("server and client on %v (mixed %v): %s", k, p.MixedCores, p.Reason)
	}
}

func TestLaptop4Cores8ThreadsSiblingsNPlus4(t *testing.T) {
	topo := newSysfs(t, "0-7").siblings(pairs(4, 4)...).node(0, "0-7").
		write("sys/fs/cgroup/cpuset/docker/cpuset.cpus", "0-7").read()
	p := Place(topo)
	checkApart(t, topo, p)
	checkOneKind(t, topo, p)
	if got := FormatCPUs(p.Server) + " " + FormatCPUs(p.Client) + " " + FormatCPUs(p.Observability); got != "0,4 1-2,5-6 3,7" {
		t.Errorf("server, client, observability = %s: %s", got, p.Reason)
	}
	if !strings.Contains(p.Reason, "SMT siblings (0,4) (1,5) (2,6) (3,7)") {
		t.Errorf("reason does not name the siblings: %s", p.Reason)
	}
}

func TestHybrid6P8E(t *testing.T) {
	// Intel's hybrid laptops number each P-core's two threads next to each other, then the
	// E-cores, one thread each.
	var cores [][]int
	for i := 0; i < 12; i += 2 {
		cores = append(cores, []int{i, i + 1})
	}
	cores = append(cores, singles(12, 19)...)
	topo := newSysfs(t, "0-19").siblings(cores...).node(0, "0-19").
		write("sys/devices/cpu_core/cpus", "0-11").write("sys/devices/cpu_atom/cpus", "12-19").read()
	p := Place(topo)
	checkApart(t, topo, p)
	checkOneKind(t, topo, p)
	for _, c := range append(append([]int{}, p.Server...), p.Client...) {
		if c >= 12 {
			t.Errorf("CPU %d is an efficiency core; server and client belong on performance cores: %s", c, p.Reason)
		}
	}
	if !strings.Contains(p.Reason, "efficiency CPUs 12-19") {
		t.Errorf("reason does not name the kinds: %s", p.Reason)
	}
}

func TestHybridByMaxFrequency(t *testing.T) {
	s := newSysfs(t, "0-5").siblings(singles(0, 5)...)
	for c := 0; c < 6; c++ {
		f := "4700000"
		if c >= 2 {
			f = "3400000"
		}
		s.write(fmt.Sprintf("sys/devices/system/cpu/cpu%d/cpufreq/cpuinfo_max_freq", c), f)
	}
	topo := s.read()
	p := Place(topo)
	checkApart(t, topo, p)
	checkOneKind(t, topo, p)
	if FormatCPUs(p.Server) != "0" || FormatCPUs(p.Client) != "1" {
		t.Errorf("server %v client %v, want the two fast CPUs 0 and 1: %s", p.Server, p.Client, p.Reason)
	}
}

func TestNUMAWorkstation(t *testing.T) {
	// 2 nodes of 4 cores × 2 threads; siblings (n, n+8); node 0 holds cores 0-3.
	topo := newSysfs(t, "0-15").siblings(pairs(8, 8)...).node(0, "0-3,8-11").node(1, "4-7,12-15").read()
	p := Place(topo)
	checkApart(t, topo, p)
	checkOneKind(t, topo, p)
	if !strings.Contains(p.Reason, "2 NUMA node(s)") {
		t.Errorf("reason: %s", p.Reason)
	}
}

func TestTwoVCPUVM(t *testing.T) {
	s := newSysfs(t, "0-1").siblings(singles(0, 1)...).node(0, "0-1").
		write("sys/fs/cgroup/cpuset/cpuset.cpus", "0-1")
	for c := 0; c < 2; c++ {
		s.write(fmt.Sprintf("sys/devices/system/cpu/cpu%d/cpu_capacity", c), "1024")
	}
	topo := s.read()
	p := Place(topo)
	checkApart(t, topo, p)
	if FormatCPUs(p.Server) != "0" || FormatCPUs(p.Client) != "1" || FormatCPUs(p.Observability) != "1" {
		t.Errorf("placement %+v", p)
	}
}

func TestDockerDesktopVMFromInside(t *testing.T) {
	// Docker Desktop's LinuxKit VM: vCPUs without SMT, no NUMA directory, cgroup v2, no cpufreq.
	topo := newSysfs(t, "0-3").siblings(singles(0, 3)...).write("sys/fs/cgroup/cpuset.cpus.effective", "0-3").read()
	p := Place(topo)
	checkApart(t, topo, p)
	if FormatCPUs(p.Observability) != "3" {
		t.Errorf("observability %v, want a core of its own", p.Observability)
	}
}

func TestCgroupRestrictedCPUSet(t *testing.T) {
	topo := newSysfs(t, "0-7").siblings(pairs(4, 4)...).
		write("sys/fs/cgroup/cpuset/docker/cpuset.cpus", "2-3,6-7").read()
	p := Place(topo)
	checkApart(t, topo, p)
	if FormatCPUs(p.Server) != "2,6" || FormatCPUs(p.Client) != "3,7" {
		t.Errorf("server %v client %v, want the allowed cores (2,6) and (3,7): %s", p.Server, p.Client, p.Reason)
	}
	if !strings.Contains(p.Reason, "Docker's cpuset 2-3,6-7") {
		t.Errorf("reason: %s", p.Reason)
	}
}

func TestCgroupV2SystemdSlice(t *testing.T) {
	topo := newSysfs(t, "0-7").siblings(pairs(4, 4)...).
		write("sys/fs/cgroup/cpuset.cpus.effective", "0-7").
		write("sys/fs/cgroup/system.slice/cpuset.cpus.effective", "0-1,4-5").read()
	if topo.AllowedFrom != "/sys/fs/cgroup/system.slice/cpuset.cpus.effective" || topo.CPUList() != "0-1,4-5" {
		t.Errorf("allowed %s from %s", topo.CPUList(), topo.AllowedFrom)
	}
}

func TestImpossibleHostsSaySo(t *testing.T) {
	one := newSysfs(t, "0-1").siblings([]int{0, 1}).read()
	if p := Place(one); !p.SMTShared || !strings.Contains(p.Reason, "one physical core") {
		t.Errorf("one core, two threads: %+v", p)
	}
	single := newSysfs(t, "0").siblings([]int{0}).read()
	if p := Place(single); !p.SMTShared || FormatCPUs(p.Server) != "0" {
		t.Errorf("one CPU: %+v", p)
	}
	mixed := newSysfs(t, "0-2").siblings([]int{0, 1}, []int{2}).
		write("sys/devices/cpu_core/cpus", "0-1").write("sys/devices/cpu_atom/cpus", "2").read()
	p := Place(mixed)
	checkApart(t, mixed, p)
	if !p.MixedCores || !strings.Contains(p.Reason, "differ") {
		t.Errorf("one P-core and one E-core: %+v", p)
	}
	if FormatCPUs(p.Server) != "0-1" {
		t.Errorf("server %v, want the performance core", p.Server)
	}
}

func TestThisMachine(t *testing.T) {
	topo, err := Read("/")
	if err != nil {
		t.Skipf("no sysfs here: %v", err)
	}
	p := Place(topo)
	t.Logf("%s", p.Reason)
	if len(coresOf(topo)) >= 2 {
		checkApart(t, topo, p)
	}
	if topo.AllowedFrom == "" {
		t.Logf("no Docker cpuset readable here")
	}
}

func TestFormatAndParseCPUs(t *testing.T) {
	for _, s := range []string{"0", "0-3", "0,2", "1-2,5-6", "0-3,8-11"} {
		c, err := ParseCPUs(s)
		if err != nil || FormatCPUs(c) != s {
			t.Errorf("%s → %v %v → %s", s, c, err, FormatCPUs(c))
		}
	}
	for _, bad := range []string{"", "a", "3-1", "-1"} {
		if _, err := ParseCPUs(bad); err == nil {
			t.Errorf("ParseCPUs(%q) accepted", bad)
		}
	}
}
