package swarm_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/protobench/protobench/internal/swarm"
	"github.com/protobench/protobench/internal/swarm/swarmtest"
)

// testImage is an image every protobench build has locally, with sh, tar and base64.
const testImage = "protobench/base:latest"

func needImage(t *testing.T, docker string) {
	t.Helper()
	c := &swarm.Client{Docker: docker}
	if _, err := c.Output(context.Background(), "image", "inspect", "--format", "{{.ID}}", testImage); err != nil {
		t.Skipf("%s is not built here (./run.sh images build): %v", testImage, err)
	}
}

// TestServiceAndJob runs a real long-lived service and a real job on the swarm: the job finds
// the service by its alias on the project's overlay, reads an input from a config, writes a
// file, prints to stdout (without a final newline) and stderr and exits 3, as the user a tool
// runs as. Everything comes back through the log transfer, and RemoveAll leaves nothing.
func TestServiceAndJob(t *testing.T) {
	sw := swarmtest.Use(t)
	needImage(t, sw.Docker)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	project := fmt.Sprintf("pbtest-swarm-%d", os.Getpid())
	c, st, err := swarm.New(ctx, sw.Docker, project)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("swarm: %+v", st)
	t.Cleanup(func() {
		if err := c.RemoveAll(context.Background()); err != nil {
			t.Errorf("RemoveAll: %v", err)
		}
		if o, err := c.List(context.Background()); err != nil || !o.Empty() {
			t.Errorf("left behind: %v (%v)", o, err)
		}
	})
	nodes, err := c.Nodes(ctx)
	if err != nil || len(nodes) == 0 {
		t.Fatalf("nodes: %v %v", nodes, err)
	}
	if !nodes[0].Self && len(nodes) == 1 || nodes[0].Cores == 0 || nodes[0].DockerVersion == "" {
		t.Errorf("node: %+v", nodes[0])
	}
	if err := c.EnsureNetwork(ctx); err != nil {
		t.Fatal(err)
	}
	if err := c.EnsureNetwork(ctx); err != nil {
		t.Fatalf("a second EnsureNetwork: %v", err)
	}
	n, err := c.InspectNetwork(ctx)
	if err != nil || n.Driver != "overlay" || n.MTU == 0 {
		t.Errorf("network: %+v %v", n, err)
	}

	srv := swarm.ServiceSpec{Name: c.ServiceName("srv"), Image: testImage, Network: c.NetworkName(), Alias: "srv", DNSRR: true,
		RestartNone: true, CPUs: "0.5", Memory: "64m", Args: []string{"sleep", "120"}, StopGrace: time.Second,
		ContainerLabels: map[string]string{"com.docker.compose.service": "srv"}}
	if _, err := c.CreateService(ctx, srv); err != nil {
		t.Fatal(err)
	}
	task, err := c.Running(ctx, srv.Name)
	if err != nil {
		t.Fatal(err)
	}
	if task.ContainerID == "" {
		t.Errorf("running task without container: %+v", task)
	}

	job := swarm.Job{
		Spec: swarm.ServiceSpec{Name: c.ServiceName("tool-1"), Image: testImage, Network: c.NetworkName(), User: "65534:65534",
			Entrypoint: []string{"/bin/sh"},
			Args: []string{"-c", `getent hosts srv >/dev/null || { echo "srv not found" >&2; exit 9; }
cat /raw/in.txt > /raw/r1.out; printf 'a\nb\n' >> /raw/r1.out; id -u >> /raw/r1.out
printf 'line1\nno newline'; echo oops >&2; exit 3`}},
		RawDir: "/raw",
		Inputs: map[string][]byte{"in.txt": []byte("input\n")},
	}
	start := time.Now()
	res, err := c.RunJob(ctx, job)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("job took %s on node %s", time.Since(start).Round(time.Millisecond), res.Task.NodeID)
	if string(res.Stdout) != "line1\nno newline" || string(res.Stderr) != "oops\n" || res.ExitCode != 3 {
		t.Errorf("stdout %q stderr %q exit %d", res.Stdout, res.Stderr, res.ExitCode)
	}
	if got := string(res.Files["r1.out"]); got != "input\na\nb\n65534\n" || len(res.Files) != 1 {
		t.Errorf("files %v", res.Files)
	}
	if res.Nofile < 1024 {
		t.Errorf("nofile %d", res.Nofile)
	}
	if tasks, _ := c.Tasks(ctx, job.Spec.Name); len(tasks) != 0 {
		t.Errorf("the job's service is still there: %+v", tasks)
	}
	// Its container goes with it (a replicated-job's would stay: moby/moby#42789).
	gone := false
	for i := 0; i < 300 && !gone; i++ { // up to a minute: swarm removes it in its own time
		out, err := c.Output(ctx, "ps", "-aq", "--filter", "id="+res.Task.ContainerID)
		gone = err == nil && strings.TrimSpace(out) == ""
		time.Sleep(200 * time.Millisecond)
	}
	if !gone {
		t.Errorf("the job's container %.12s is still there after its service was removed", res.Task.ContainerID)
	}

	// A job whose image no node has is rejected, and says so.
	bad := swarm.Job{Spec: swarm.ServiceSpec{Name: c.ServiceName("tool-2"), Image: "protobench/no-such-image:none", Args: []string{"true"}}, RawDir: "/raw"}
	if _, err := c.RunJob(ctx, bad); err == nil || !strings.Contains(err.Error(), "rejected") {
		t.Errorf("a job without image: %v", err)
	}
	stopStart := time.Now()
	if err := c.StopService(ctx, srv.Name); err != nil {
		t.Fatal(err)
	}
	t.Logf("stopped the service in %s", time.Since(stopStart).Round(time.Millisecond))
	if out, _ := c.Output(ctx, "ps", "-q", "--filter", "id="+task.ContainerID); strings.TrimSpace(out) != "" {
		t.Errorf("the service's container still runs after StopService")
	}
	if err := c.RemoveService(ctx, srv.Name); err != nil {
		t.Error(err)
	}
	if err := c.RemoveService(ctx, srv.Name); err != nil {
		t.Errorf("removing a removed service: %v", err)
	}
}

// TestJobTransferOutlivesLogRotation runs a job whose transfer is larger than a daemon's
// default log keeps when it rotates (json-file max-size=10m, max-file=3 on the build machines:
// 30 MB of JSON log, about 13 MB of base64): 24 MiB of random bytes, which gzip cannot shrink,
// in a file of RawDir, and their sha256 on stdout. Under the daemon's own log options the begin
// marker was rotated away, as ghz's 20 MB reports were on --engine swarm; with the job's own
// log options every byte comes back.
func TestJobTransferOutlivesLogRotation(t *testing.T) {
	sw := swarmtest.Use(t)
	needImage(t, sw.Docker)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	project := fmt.Sprintf("pbtest-swarmlog-%d", os.Getpid())
	c, _, err := swarm.New(ctx, sw.Docker, project)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { swarmtest.RemoveProject(t, sw.Docker, project) })
	const size = 24 << 20
	job := swarm.Job{
		Spec: swarm.ServiceSpec{Name: c.ServiceName("big-1"), Image: testImage, Entrypoint: []string{"/bin/sh"},
			Args: []string{"-c", fmt.Sprintf("head -c %d /dev/urandom >/raw/big.bin && sha256sum /raw/big.bin | cut -d' ' -f1", size)}},
		RawDir: "/raw",
	}
	start := time.Now()
	res, err := c.RunJob(ctx, job)
	if err != nil {
		t.Fatalf("a job with a %d MiB transfer: %v", size>>20, err)
	}
	t.Logf("a %d MiB transfer came back in %s", size>>20, time.Since(start).Round(time.Millisecond))
	got := res.Files["big.bin"]
	sum := sha256.Sum256(got)
	if len(got) != size || hex.EncodeToString(sum[:]) != strings.TrimSpace(string(res.Stdout)) {
		t.Errorf("big.bin: %d bytes, sha256 %x; the job wrote %d bytes, sha256 %s", len(got), sum, size, res.Stdout)
	}
}
