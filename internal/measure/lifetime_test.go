package measure

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/protobench/protobench/internal/compose"
	"github.com/protobench/protobench/internal/record"
)

// cpuSample is a container's cumulative CPU time (cgroup v1 cpuacct.usage) at a moment.
type cpuSample struct {
	at    time.Time
	usage float64 // seconds
}

// cpuOver is the CPU-seconds the samples show between a and b, each end interpolated; after the
// last sample the container was gone and used nothing more.
func cpuOver(ss []cpuSample, a, b time.Time) float64 {
	at := func(t time.Time) float64 {
		if len(ss) == 0 || t.Before(ss[0].at) {
			return 0
		}
		for i := 1; i < len(ss); i++ {
			if t.Before(ss[i].at) {
				f := float64(t.Sub(ss[i-1].at)) / float64(ss[i].at.Sub(ss[i-1].at))
				return ss[i-1].usage + f*(ss[i].usage-ss[i-1].usage)
			}
		}
		return ss[len(ss)-1].usage
	}
	return at(b) - at(a)
}

// TestSlowStoppingToolKeepsItsWindow runs a real one-off container through compose that works
// (a busy loop, standing in for a server kept busy by the tool) for 3 s and then takes 3 s more
// to stop. The window from the container's own start, as the runner now takes it, must show the
// core busy; the window that ended when `compose run` returned, as before, reads it low.
func TestSlowStoppingToolKeepsItsWindow(t *testing.T) {
	if _, err := compose.CheckDocker(context.Background(), "docker"); errors.Is(err, compose.ErrDockerUnreachable) {
		t.Skipf("docker unreachable: %v", err)
	}
	const image = "protobench/base:latest"
	if err := exec.Command("docker", "image", "inspect", image).Run(); err != nil {
		t.Skipf("image %s not built (./run.sh images build base)", image)
	}
	if _, err := os.Stat("/sys/fs/cgroup/cpuacct/docker"); err != nil {
		t.Skip("no cgroup v1 cpuacct hierarchy for docker containers here")
	}
	dir := t.TempDir()
	file := "services:\n  tool:\n    image: " + image + "\n    cpuset: \"1\"\n"
	if err := os.WriteFile(filepath.Join(dir, "compose.yaml"), []byte("version: \"2.4\"\n"+file), 0o644); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	project := "pbtest-lifetime-" + strconv.Itoa(os.Getpid())
	c, err := compose.New(ctx, compose.Options{Dir: dir, Files: []string{"compose.yaml"}, ProjectName: project})
	if err != nil {
		t.Skipf("compose: %v", err)
	}
	t.Cleanup(func() { _ = c.Down(context.Background()) })
	name := project + "-tool"

	// Sample the container's CPU from its cgroup while it lives.
	var (
		mu      sync.Mutex
		samples []cpuSample
	)
	stop := make(chan struct{})
	sampled := make(chan struct{})
	go func() {
		defer close(sampled)
		id := ""
		for {
			select {
			case <-stop:
				return
			case <-time.After(50 * time.Millisecond):
			}
			if id == "" {
				out, err := exec.Command("docker", "inspect", "--format", "{{.Id}}", name).Output()
				if err != nil {
					continue
				}
				id = strings.TrimSpace(string(out))
			}
			data, err := os.ReadFile(filepath.Join("/sys/fs/cgroup/cpuacct/docker", id, "cpuacct.usage"))
			now := time.Now()
			if err != nil {
				continue
			}
			ns, _ := strconv.ParseFloat(strings.TrimSpace(string(data)), 64)
			mu.Lock()
			samples = append(samples, cpuSample{now, ns / 1e9})
			mu.Unlock()
		}
	}()
	const busy = 3 * time.Second
	_, stderr, code, started, finished, err := c.RunTimed(ctx, "tool", name, "", nil,
		[]string{"sh", "-c", "timeout 3 sh -c 'while :; do :; done'; sleep 3"})
	returned := time.Now()
	close(stop)
	<-sampled
	if err != nil || code != 0 {
		t.Fatalf("run: code %d, %v: %s", code, err, stderr)
	}
	if started.IsZero() || !finished.After(started.Add(busy)) {
		t.Fatalf("container lifetime %s to %s: want the start and finish docker recorded", started, finished)
	}

	// The tool reports having measured for 3 s with no warm-up of its own.
	parsed := record.Record{DurationS: busy.Seconds()}
	ws, we := lifetimeWindow(parsed, started, finished, 0)
	olds, olde := measuredWindow(parsed, time.Time{}, returned) // the old window: the tail before `run` returned
	mu.Lock()
	defer mu.Unlock()
	if len(samples) < 10 {
		t.Fatalf("only %d CPU samples of the container", len(samples))
	}
	newPct := 100 * cpuOver(samples, ws, we) / we.Sub(ws).Seconds()
	oldPct := 100 * cpuOver(samples, olds, olde) / olde.Sub(olds).Seconds()
	truth := 100 * cpuOver(samples, started, started.Add(busy)) / busy.Seconds()
	t.Logf("busy core over its first 3 s: %.1f %%; window from the container's start: %.1f %% (%s to %s after start); window ending when compose returned: %.1f %% (compose returned %s after the container finished)",
		truth, newPct, ws.Sub(started).Round(time.Millisecond), we.Sub(started).Round(time.Millisecond), oldPct, returned.Sub(finished).Round(time.Millisecond))
	if truth < 30 {
		t.Skipf("the busy loop got only %.0f %% of its core: the machine is too loaded to tell", truth)
	}
	if newPct < 0.9*truth {
		t.Errorf("CPU over the lifetime window %.1f %%, want at least 90 %% of the busy core's %.1f %%", newPct, truth)
	}
	if oldPct >= 0.75*truth {
		t.Errorf("CPU over the old window %.1f %% is close to the busy core's %.1f %%: the test does not exercise a slow stop", oldPct, truth)
	}
}
