package serverkit

import (
	"bufio"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
)

// CPUInfo is what the process knows about its CPU budget, reported on /config and logged at
// start so that a run can check that GOMAXPROCS followed the container's quota.
type CPUInfo struct {
	GOMAXPROCS int `json:"gomaxprocs"`
	NumCPU     int `json:"num_cpu"` // CPUs in the affinity mask (the cpuset)
	// QuotaCores is the CFS quota divided by its period; 0 means no quota.
	QuotaCores float64 `json:"cpu_quota_cores"`
	// QuotaSource names the file the quota was read from (empty when none was found).
	QuotaSource string `json:"cpu_quota_source,omitempty"`
	// ExpectedGOMAXPROCS is what Go 1.25+ derives by itself: min(NumCPU, max(ceil(quota), 2)).
	ExpectedGOMAXPROCS int `json:"expected_gomaxprocs"`
	// GOMAXPROCSEnv is the GOMAXPROCS environment variable, which overrides the derivation.
	GOMAXPROCSEnv string `json:"gomaxprocs_env,omitempty"`
}

// ReadCPUInfo reads the cgroup CPU quota (v2 cpu.max, or v1 cpu.cfs_quota_us/cpu.cfs_period_us)
// and the scheduler's view of the CPUs.
func ReadCPUInfo() CPUInfo {
	info := CPUInfo{GOMAXPROCS: runtime.GOMAXPROCS(0), NumCPU: runtime.NumCPU(), GOMAXPROCSEnv: os.Getenv("GOMAXPROCS")}
	info.QuotaCores, info.QuotaSource = readQuota("/")
	info.ExpectedGOMAXPROCS = info.NumCPU
	if info.QuotaCores > 0 {
		limit := max(int(math.Ceil(info.QuotaCores)), 2)
		info.ExpectedGOMAXPROCS = min(limit, info.NumCPU)
	}
	return info
}

// readQuota looks for the quota under root (a parameter so tests can point it at a fake tree).
// Inside a container the cgroup is usually mounted at the container's own node; on a host (or
// with the host cgroup namespace) /proc/self/cgroup gives the path below the mount, so both are
// tried, the process's own path first.
func readQuota(root string) (float64, string) {
	self := selfCgroupPaths(filepath.Join(root, "proc/self/cgroup"))
	// cgroup v2: one unified hierarchy, "max 100000" or "200000 100000".
	if _, err := os.Stat(filepath.Join(root, "sys/fs/cgroup/cgroup.controllers")); err == nil {
		for _, dir := range candidates(filepath.Join(root, "sys/fs/cgroup"), self[""]) {
			p := filepath.Join(dir, "cpu.max")
			b, err := os.ReadFile(p)
			if err != nil {
				continue
			}
			f := strings.Fields(string(b))
			if len(f) != 2 || f[0] == "max" {
				return 0, p
			}
			q, err1 := strconv.ParseFloat(f[0], 64)
			per, err2 := strconv.ParseFloat(f[1], 64)
			if err1 != nil || err2 != nil || per <= 0 {
				return 0, p
			}
			return q / per, p
		}
		return 0, ""
	}
	// cgroup v1: the cpu controller, possibly co-mounted as cpu,cpuacct.
	for _, mount := range []string{"cpu", "cpu,cpuacct", "cpuacct,cpu"} {
		for _, dir := range candidates(filepath.Join(root, "sys/fs/cgroup", mount), self["cpu"]) {
			qp := filepath.Join(dir, "cpu.cfs_quota_us")
			qb, err := os.ReadFile(qp)
			if err != nil {
				continue
			}
			pb, err := os.ReadFile(filepath.Join(dir, "cpu.cfs_period_us"))
			if err != nil {
				continue
			}
			q, err1 := strconv.ParseFloat(strings.TrimSpace(string(qb)), 64)
			per, err2 := strconv.ParseFloat(strings.TrimSpace(string(pb)), 64)
			if err1 != nil || err2 != nil || q <= 0 || per <= 0 {
				return 0, qp
			}
			return q / per, qp
		}
	}
	return 0, ""
}

func candidates(mount, sub string) []string {
	if sub == "" || sub == "/" {
		return []string{mount}
	}
	return []string{filepath.Join(mount, sub), mount}
}

// selfCgroupPaths maps a controller ("" for v2) to the process's cgroup path.
func selfCgroupPaths(file string) map[string]string {
	out := map[string]string{}
	f, err := os.Open(file)
	if err != nil {
		return out
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		parts := strings.SplitN(sc.Text(), ":", 3)
		if len(parts) != 3 {
			continue
		}
		if parts[1] == "" {
			out[""] = parts[2]
			continue
		}
		for _, c := range strings.Split(parts[1], ",") {
			out[c] = parts[2]
		}
	}
	return out
}
