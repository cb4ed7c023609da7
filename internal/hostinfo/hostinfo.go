// Package hostinfo records where a run happened, so that a reader of run.json can tell whether two
// results are comparable: CPU, kernel, Docker and Compose versions, image IDs and the git commit.
package hostinfo

import (
	"bufio"
	"bytes"
	"context"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"time"
)

// Host describes the machine and software a run used.
type Host struct {
	Hostname       string `json:"hostname"`
	CPUModel       string `json:"cpu_model"`
	Cores          int    `json:"cores"`
	MemoryBytes    int64  `json:"memory_bytes"`
	Kernel         string `json:"kernel"`
	OS             string `json:"os"`
	CgroupVersion  int    `json:"cgroup_version"`
	DockerVersion  string `json:"docker_version"`
	ComposeVersion string `json:"compose_version"`
	GitCommit      string `json:"git_commit"`
	GitDirty       bool   `json:"git_dirty"`
	GoVersion      string `json:"go_version"` // of the protobench binary that ran the scenario
}

// Collect gathers Host facts. Missing facts are left empty rather than failing the run: a run
// without a Docker version is still worth keeping, and the empty field shows what was unknown.
func Collect(ctx context.Context, repoRoot string) Host {
	h := Host{Cores: runtime.NumCPU(), GoVersion: runtime.Version()}
	h.Hostname, _ = os.Hostname()
	h.CPUModel = cpuModel("/proc/cpuinfo")
	h.MemoryBytes = memTotal("/proc/meminfo")
	if b, err := os.ReadFile("/proc/sys/kernel/osrelease"); err == nil {
		h.Kernel = strings.TrimSpace(string(b))
	}
	h.OS = osPrettyName("/etc/os-release")
	h.CgroupVersion = 1
	if _, err := os.Stat("/sys/fs/cgroup/cgroup.controllers"); err == nil {
		h.CgroupVersion = 2
	}
	docker := os.Getenv("PROTOBENCH_DOCKER") // the docker CLI the run uses
	if docker == "" {
		docker = "docker"
	}
	h.DockerVersion = output(ctx, "", docker, "version", "--format", "{{.Server.Version}}")
	h.GitCommit = output(ctx, repoRoot, "git", "rev-parse", "HEAD")
	h.GitDirty = output(ctx, repoRoot, "git", "status", "--porcelain", "--untracked-files=no") != ""
	return h
}

func output(ctx context.Context, dir, name string, args ...string) string {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Dir = dir
	b, err := cmd.Output()
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(b))
}

func cpuModel(path string) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return ""
	}
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		k, v, ok := strings.Cut(sc.Text(), ":")
		if ok && strings.TrimSpace(k) == "model name" {
			return strings.TrimSpace(v)
		}
	}
	return ""
}

func memTotal(path string) int64 {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0
	}
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) >= 2 && f[0] == "MemTotal:" {
			var kb int64
			for _, c := range f[1] {
				kb = kb*10 + int64(c-'0')
			}
			return kb * 1024
		}
	}
	return 0
}

func osPrettyName(path string) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return ""
	}
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "PRETTY_NAME="); ok {
			return strings.Trim(v, `"`)
		}
	}
	return ""
}
