package doctor

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"

	"github.com/protobench/protobench/internal/images"
	"github.com/protobench/protobench/internal/scenario"
)

// OtherLoad is the share of the CPUs of cpuset that processes ran on over d, in percent, from
// /proc/stat's user, nice and system time: the modes busy-host counts (measure's processModes).
// Before a run's containers start, all of it is other processes'.
func OtherLoad(ctx context.Context, root, cpuset string, d time.Duration) (float64, error) {
	cpus, err := scenario.ParseCPUSet(cpuset)
	if err != nil {
		return 0, err
	}
	path := filepath.Join(root, "proc/stat")
	before, err := procStat(path, cpus)
	if err != nil {
		return 0, err
	}
	select {
	case <-ctx.Done():
		return 0, ctx.Err()
	case <-time.After(d):
	}
	after, err := procStat(path, cpus)
	if err != nil {
		return 0, err
	}
	busy, total := after[0]-before[0], after[1]-before[1]
	if total <= 0 {
		return 0, fmt.Errorf("%s did not advance", path)
	}
	return 100 * busy / total, nil
}

// procStat sums, over cpus, the process time (user, nice, system) and all time of /proc/stat.
func procStat(path string, cpus []int) ([2]float64, error) {
	var out [2]float64
	b, err := os.ReadFile(path)
	if err != nil {
		return out, err
	}
	want := map[string]bool{}
	for _, c := range cpus {
		want["cpu"+strconv.Itoa(c)] = true
	}
	found := 0
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) < 5 || !want[f[0]] {
			continue
		}
		found++
		for i, v := range f[1:] {
			x, _ := strconv.ParseFloat(v, 64)
			if i < 8 { // guest time is already in user
				out[1] += x
			}
			if i < 3 {
				out[0] += x
			}
		}
	}
	if found != len(cpus) {
		return out, fmt.Errorf("%s lists %d of the CPUs %v", path, found, cpus)
	}
	return out, nil
}

// info is what `docker info` says of the daemon's machine (Docker Desktop's VM on a Mac).
type info struct {
	NCPU            int
	MemTotal        int64
	OperatingSystem string
	DockerRootDir   string
	ServerVersion   string
}

func dockerInfo(ctx context.Context, docker string) (info, error) {
	ctx, cancel := context.WithTimeout(ctx, 15*time.Second)
	defer cancel()
	var i info
	out, err := exec.CommandContext(ctx, docker, "info", "--format", "{{json .}}").Output()
	if err != nil {
		return i, fmt.Errorf("%s info: %w", docker, err)
	}
	if err := json.Unmarshal(out, &i); err != nil {
		return i, fmt.Errorf("%s info: %w", docker, err)
	}
	return i, nil
}

// minFreeDisk is the free space below which the disk line warns: the images and their build
// layers take a few GB, and results folders keep raw tool output.
const minFreeDisk = 8 << 30

func diskLine(o Options, i info, infoErr error) Line {
	dir, what := i.DockerRootDir, "Docker's root "+i.DockerRootDir
	var st unix.Statfs_t
	if infoErr != nil || dir == "" || unix.Statfs(dir, &st) != nil {
		// Docker Desktop keeps its root inside its VM: the checkout's disk is what we can see.
		dir, what = o.RepoRoot, "the checkout's disk ("+o.RepoRoot+"; Docker's root is not on this machine's file system)"
		if err := unix.Statfs(dir, &st); err != nil {
			return Line{Topic: "disk", Text: "not available: " + err.Error()}
		}
	}
	free := int64(st.Bavail) * int64(st.Bsize)
	line := Line{Topic: "disk", Text: fmt.Sprintf("%.1f GiB free on %s", float64(free)/(1<<30), what)}
	if free < minFreeDisk {
		line.Warn = true
		line.Fix = fmt.Sprintf("free %d GiB or more for the images (docker system prune removes unused ones)", minFreeDisk>>30)
	}
	return line
}

func dockerLine(i info, err error, hostCPUs int) Line {
	if err != nil {
		return Line{Topic: "docker", Text: "not answering: " + err.Error(), Warn: true, Fix: "start Docker (Docker Desktop, or sudo systemctl start docker)"}
	}
	line := Line{Topic: "docker", Text: fmt.Sprintf("%s %s: %d CPUs, %.1f GiB memory", i.OperatingSystem, i.ServerVersion, i.NCPU, float64(i.MemTotal)/(1<<30))}
	switch {
	case i.NCPU < 2:
		line.Warn = true
		line.Fix = "a run needs 2 CPUs or more, one for the server and one for the load tool: give Docker's VM more (Docker Desktop: Settings → Resources)"
	case i.MemTotal < 3<<30:
		line.Warn = true
		line.Fix = "give Docker 4 GiB of memory or more (Docker Desktop: Settings → Resources)"
	case strings.Contains(i.OperatingSystem, "Docker Desktop") && i.NCPU < 4:
		line.Warn = true
		line.Fix = "Docker Desktop's VM has only " + strconv.Itoa(i.NCPU) + " CPUs: give it 4 or more (Settings → Resources) so the server and the load tool get cores of their own and the stack one more"
	}
	if hostCPUs > 0 && i.NCPU != hostCPUs {
		line.Text += fmt.Sprintf(" (the layout was made for %d CPUs)", hostCPUs)
	}
	return line
}

func registryLine(ctx context.Context, o Options) Line {
	timeout := o.RegistryTimeout
	if timeout <= 0 {
		timeout = 30 * time.Second
	}
	answers, detail := images.ProbeRegistry(ctx, o.Docker, timeout)
	switch {
	case !answers:
		return Line{Topic: "registry", Text: "no registry answers (" + detail + "): the images are built locally, 14 to 25 minutes the first time on 2 cores"}
	case detail != "":
		return Line{Topic: "registry", Text: "answers but refused " + images.UpstreamBase + " (" + detail + "): what it does not serve is built locally"}
	}
	return Line{Topic: "registry", Text: "answers: pinned upstream images are pulled"}
}
