package compose_test

import (
	"bytes"
	"context"
	"errors"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/protobench/protobench/internal/compose"
	"github.com/protobench/protobench/internal/images"
	"github.com/protobench/protobench/internal/swarm/swarmtest"
)

func TestParseConfigBothShapes(t *testing.T) {
	// v2 writes volumes in the long form, numbers where v1 writes strings, and may write a
	// ulimit as one number.
	v2 := []byte(`name: p
services:
  loadgen:
    cpus: 1.5
    cpuset: "1"
    entrypoint:
      - protobench
    image: protobench/protobench:abc
    labels:
      protobench.step: '@@PROTOBENCH_LABEL_STEP@@'
    mem_limit: "1073741824"
    ulimits:
      nofile: 16384
    user: 1000:1000
    volumes:
      - type: bind
        source: /tmp/raw
        target: /raw
        bind:
          create_host_path: true
      - type: bind
        source: /x/proto
        target: /usr/share/protobench/proto
        read_only: true
    environment:
      K6_X: "1"
      PASSED: null
`)
	svcs, err := compose.ParseConfig(v2)
	if err != nil {
		t.Fatal(err)
	}
	s := svcs["loadgen"]
	if s.CPUs != "1.5" || s.CPUSet != "1" || s.Memory != "1073741824" || s.User != "1000:1000" {
		t.Errorf("caps %+v", s)
	}
	if got := s.Ulimits["nofile"]; got != [2]int64{16384, 16384} {
		t.Errorf("ulimit %v", got)
	}
	if strings.Join(s.Volumes, ",") != "/tmp/raw:/raw:rw,/x/proto:/usr/share/protobench/proto:ro" {
		t.Errorf("volumes %v", s.Volumes)
	}
	if s.Environment["PASSED"] != nil || *s.Environment["K6_X"] != "1" {
		t.Errorf("environment %v", s.Environment)
	}
}

// TestFastPathAgainstCompose starts the gRPC server and runs the load generator through the fast
// path, from the real compose file and images, and checks that the containers carry what compose
// would have given them: caps, labels, network alias, and that a cancelled tool leaves nothing.
func TestFastPathAgainstCompose(t *testing.T) {
	if _, err := compose.CheckDocker(context.Background(), "docker"); errors.Is(err, compose.ErrDockerUnreachable) {
		t.Skipf("docker unreachable: %v", err)
	}
	swarmtest.ComposeStack(t)
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Minute)
	defer cancel()
	var log bytes.Buffer
	set, err := images.Ensure(ctx, images.Options{RepoRoot: root, Only: []string{images.Protobench, images.NodeExporter}, Log: &log})
	if err != nil {
		t.Fatalf("images: %v\n%s", err, log.String())
	}
	env := images.EnvVars(set)
	env["PROTOBENCH_RAW_DIR"] = t.TempDir()
	project := "protobench-fasttest"
	c, err := compose.New(ctx, compose.Options{Dir: filepath.Join(root, "compose"), ProjectName: project, Env: env})
	if err != nil {
		t.Skipf("compose: %v", err)
	}
	t.Cleanup(func() {
		down, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		if err := c.Down(down); err != nil {
			t.Errorf("down: %v", err)
		}
		// down keeps the Prometheus volume on purpose (earlier runs stay in Grafana); a test's own
		// project has no earlier runs to keep.
		_ = exec.Command("docker", "volume", "rm", "-f", project+"_prometheus-data").Run()
		out, _ := exec.Command("docker", "ps", "-aq", "--filter", "label=com.docker.compose.project="+project).Output()
		if len(bytes.TrimSpace(out)) > 0 {
			t.Errorf("containers left behind: %s", out)
		}
	})
	// Any service brings up the project's network, which the fast path joins.
	if err := c.Up(ctx, nil, "node-exporter"); err != nil {
		t.Fatal(err)
	}
	checkSetCPUSet(ctx, t, c, "node-exporter")

	serverEnv := map[string]string{
		"PROTOBENCH_SERVER_CPUS": "0.5", "PROTOBENCH_SERVER_CPUSET": "0", "PROTOBENCH_SERVER_MEM": "268435456",
		"PROTOBENCH_GRPC_MAX_CONCURRENT_STREAMS": "64", "PROTOBENCH_LABEL_STEP": "fast-step",
	}
	grpc, err := c.ServiceSpec(ctx, "grpc", serverEnv)
	if err != nil {
		t.Fatal(err)
	}
	started := time.Now()
	id, err := c.StartFast(ctx, compose.FastContainer{Service: grpc, Name: project + "-grpc", Env: serverEnv})
	if err != nil {
		t.Fatal(err)
	}
	for {
		if err := c.Probe(ctx, id, grpc); err == nil {
			break
		} else if time.Since(started) > time.Minute {
			t.Fatalf("server not healthy after a minute: %v", err)
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Logf("server started and answered its probe in %s", time.Since(started).Round(time.Millisecond))
	out, err := exec.Command("docker", "inspect", "--format",
		`{{.HostConfig.NanoCpus}} {{.HostConfig.CpusetCpus}} {{.HostConfig.Memory}} {{index .Config.Labels "com.docker.compose.service"}} {{index .Config.Labels "protobench.step"}} {{index .Config.Labels "protobench.role"}} {{range .Config.Env}}{{.}};{{end}}`, id).Output()
	if err != nil {
		t.Fatal(err)
	}
	got := string(out)
	for _, want := range []string{"500000000 0 268435456 grpc fast-step server ", "PROTOBENCH_GRPC_MAX_CONCURRENT_STREAMS=64;"} {
		if !strings.Contains(got, want) {
			t.Errorf("server container %q lacks %q", got, want)
		}
	}

	clientEnv := map[string]string{"PROTOBENCH_CLIENT_CPUS": "1", "PROTOBENCH_CLIENT_CPUSET": "1", "PROTOBENCH_CLIENT_MEM": "536870912"}
	loadgen, err := c.ServiceSpec(ctx, "loadgen", clientEnv)
	if err != nil {
		t.Fatal(err)
	}
	tool := compose.FastContainer{Service: loadgen, Name: project + "-loadgen", Env: clientEnv,
		Args: []string{"load", "--target", "grpc://grpc:50051", "--method", "GetUser", "--connections", "1", "--concurrency", "4", "--duration", "1s", "--warmup", "0s"}}
	stdout, stderr, code, err := c.RunFast(ctx, tool)
	if err != nil || code != 0 {
		t.Fatalf("load: code %d, err %v\nstdout %s\nstderr %s", code, err, stdout, stderr)
	}
	if !strings.Contains(string(stdout)+string(stderr), "GetUser") {
		t.Errorf("load output names no GetUser:\n%s\n%s", stdout, stderr)
	}

	// k6's container gets compose's collector settings, its memory limit from the run's variable.
	k6Env := map[string]string{"PROTOBENCH_CLIENT_CPUS": "1", "PROTOBENCH_CLIENT_CPUSET": "1", "PROTOBENCH_CLIENT_MEM": "536870912", "PROTOBENCH_CLIENT_GOMEMLIMIT": "429496728"}
	k6spec, err := c.ServiceSpec(ctx, "k6", k6Env)
	if err != nil {
		t.Fatal(err)
	}
	k6args := strings.Join(c.DockerArgs(compose.FastContainer{Service: k6spec, Name: project + "-k6", Env: k6Env, OneOff: true}), " ")
	for _, want := range []string{"-e GOGC=400", "-e GOMEMLIMIT=429496728", "--memory 536870912"} {
		if !strings.Contains(k6args, want) {
			t.Errorf("k6's docker run lacks %q: %s", want, k6args)
		}
	}

	// A tool whose context ends is stopped and its container removed.
	tool.Args = []string{"load", "--target", "grpc://grpc:50051", "--duration", "60s"}
	short, cancelShort := context.WithTimeout(ctx, 3*time.Second)
	_, _, code, err = c.RunFast(short, tool)
	cancelShort()
	if err == nil || code != -1 {
		t.Errorf("cancelled tool: code %d, err %v; want -1 and the context's error", code, err)
	}
	if out, _ := exec.Command("docker", "ps", "-aq", "--filter", "name="+tool.Name).Output(); len(bytes.TrimSpace(out)) > 0 {
		t.Errorf("cancelled tool's container still exists: %s", out)
	}
	if err := c.RemoveByID(ctx, id); err != nil {
		t.Fatal(err)
	}
}

// checkSetCPUSet moves a running container of the stack between cores, as a run does for a
// client-bound tool, and reads the move back from the daemon; a cpuset the host lacks is an
// error, and the container stays where it was.
func checkSetCPUSet(ctx context.Context, t *testing.T, c *compose.Client, service string) {
	t.Helper()
	if runtime.NumCPU() < 2 {
		t.Log("one core: no other core to move the stack to")
		return
	}
	id, err := c.ContainerID(ctx, service)
	if err != nil {
		t.Fatal(err)
	}
	cpuset := func() string {
		out, err := exec.Command("docker", "inspect", "--format", "{{.HostConfig.CpusetCpus}}", id).Output()
		if err != nil {
			t.Fatal(err)
		}
		return strings.TrimSpace(string(out))
	}
	moves := []string{"0", "1"}
	if before := cpuset(); before != "" {
		// Back where compose put it; a container with no cpuset (all cores) has no way back,
		// since docker update takes "" as "no change".
		moves = append(moves, before)
	}
	for _, want := range moves {
		if err := c.SetCPUSet(ctx, id, want); err != nil {
			t.Fatalf("SetCPUSet %s: %v", want, err)
		}
		if got := cpuset(); got != want {
			t.Errorf("after SetCPUSet(%s) the daemon says cpuset %q", want, got)
		}
	}
	missing := strconv.Itoa(runtime.NumCPU() + 8)
	if err := c.SetCPUSet(ctx, id, missing); err == nil {
		t.Errorf("SetCPUSet to cpu %s, which this host lacks: no error", missing)
	}
	if got, last := cpuset(), moves[len(moves)-1]; got != last {
		t.Errorf("after a refused move the cpuset is %q, want %q", got, last)
	}
}
