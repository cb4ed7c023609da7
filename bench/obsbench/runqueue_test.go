package obsbench

import (
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestSchedWatchReadsARealContainer samples a real container's threads through its cgroup and
// /proc, found by the container's name before it exists: a shell that counts for a while, then
// sleeps. Its CPU and runs must show, and the samples must make a delta.
func TestSchedWatchReadsARealContainer(t *testing.T) {
	ctx, base := baseImage(t)
	name := "protobench-obsbench-test-" + strconv.Itoa(os.Getpid())
	watch := watchSched(name, 100*time.Millisecond)
	out, err := exec.CommandContext(ctx, "docker", "run", "-d", "--rm", "--name", name, "--label", "protobench.obsbench.test=1",
		base, "sh", "-c", "i=0; while [ $i -lt 1000000 ]; do i=$((i+1)); done; sleep 60").CombinedOutput()
	if err != nil {
		watch.stop()
		t.Fatalf("docker run: %v: %s", err, out)
	}
	id := strings.TrimSpace(string(out))
	defer exec.Command("docker", "rm", "-f", id).Run()
	// Until the count is done and the shell sleeps: its CPU stops growing.
	deadline := time.Now().Add(2 * time.Minute)
	var last int64 = -1
	for time.Now().Before(deadline) {
		time.Sleep(500 * time.Millisecond)
		threads, ok := containerSched(id)
		if !ok {
			t.Fatalf("no schedstat for container %s: its cgroup's task list was not found", id)
		}
		var cpu int64
		for _, th := range threads {
			cpu += th.CPUNs
		}
		if cpu == last {
			break
		}
		last = cpu
	}
	samples := watch.stop()
	if len(samples) < 3 {
		t.Fatalf("%d samples, want several", len(samples))
	}
	w, ok := sampleDelta(samples, samples[0].At, samples[len(samples)-1].At)
	if !ok {
		t.Fatalf("no delta from %d samples: %+v", len(samples), samples)
	}
	if w.Cores <= 0 {
		t.Errorf("the counting shell shows no CPU: %+v", w)
	}
}
