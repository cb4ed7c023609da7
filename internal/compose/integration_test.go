package compose_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/protobench/protobench/internal/compose"
	"github.com/protobench/protobench/internal/images"
	"github.com/protobench/protobench/internal/swarm/swarmtest"
)

// TestStackWithEveryCompose brings up Prometheus, cAdvisor and the gRPC server from the real
// compose file and the real images (built or found by images.Ensure), with each compose
// implementation installed (v2 plugin, v1 docker-compose): the server must become healthy with
// the caps applied, and Prometheus must hold cAdvisor's CPU series for it.
func TestStackWithEveryCompose(t *testing.T) {
	if _, err := compose.CheckDocker(context.Background(), "docker"); errors.Is(err, compose.ErrDockerUnreachable) {
		t.Skipf("docker unreachable: %v", err)
	}
	swarmtest.ComposeStack(t)
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 45*time.Minute)
	defer cancel()

	var log bytes.Buffer
	set, err := images.Ensure(ctx, images.Options{
		RepoRoot: root,
		Only:     []string{images.Protobench, images.Prometheus, images.Cadvisor},
		Log:      &log,
	})
	t.Logf("images:\n%s", log.String())
	if err != nil {
		t.Fatalf("images: %v", err)
	}

	kinds := []struct {
		name    string
		command []string
	}{
		{"v2", []string{"docker", "compose"}},
		{"v1", []string{"docker-compose"}},
	}
	ran := 0
	for _, k := range kinds {
		t.Run(k.name, func(t *testing.T) {
			if err := exec.Command(k.command[0], append(k.command[1:], "version")...).Run(); err != nil {
				t.Skipf("%s not installed", strings.Join(k.command, " "))
			}
			ran++
			stackTest(ctx, t, root, k.command, set)
		})
	}
	if ran == 0 {
		t.Skip("no compose implementation installed")
	}
}

func stackTest(ctx context.Context, t *testing.T, root string, command []string, set images.Set) {
	project := "protobench-itest-" + strconv.Itoa(len(command))
	promPort := freePort(t)
	env := images.EnvVars(set)
	env["PROTOBENCH_PROMETHEUS_PORT"] = strconv.Itoa(promPort)
	env["PROTOBENCH_RAW_DIR"] = t.TempDir()

	c, err := compose.New(ctx, compose.Options{
		Dir: filepath.Join(root, "compose"), ProjectName: project, Env: env, Command: command,
		// The test reads Prometheus on its published port.
		Files: append(append([]string{}, compose.DefaultFiles...), compose.PublishFile),
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("compose %s (%s)", c.Version(), c.Kind())
	t.Cleanup(func() {
		down, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		if err := c.Down(down); err != nil {
			t.Errorf("down: %v", err)
		}
		_ = exec.Command("docker", "volume", "rm", "-f", project+"_prometheus-data").Run()
	})

	if err := c.Up(ctx, nil, "prometheus", "cadvisor"); err != nil {
		t.Fatal(err)
	}
	// The port now belongs to this stack: a second Up must not call it taken.
	if err := c.Up(ctx, nil, "prometheus"); err != nil {
		t.Fatalf("second up of a running prometheus: %v", err)
	}

	serverEnv := map[string]string{
		"PROTOBENCH_SERVER_CPUS":                 "0.5",
		"PROTOBENCH_SERVER_CPUSET":               "0",
		"PROTOBENCH_SERVER_MEM":                  "268435456",
		"PROTOBENCH_GRPC_MAX_CONCURRENT_STREAMS": "64",
		"PROTOBENCH_NOFILE":                      "12345",
	}
	if err := c.Recreate(ctx, "grpc", serverEnv); err != nil {
		t.Fatal(err)
	}
	if err := c.WaitHealthy(ctx, "grpc", 90*time.Second); err != nil {
		t.Fatal(err)
	}
	first, err := c.ContainerID(ctx, "grpc")
	if err != nil || first == "" {
		t.Fatalf("container of grpc: %q, %v", first, err)
	}
	checkCaps(ctx, t, first)

	// A recreate gives a fresh container.
	if err := c.Recreate(ctx, "grpc", serverEnv); err != nil {
		t.Fatal(err)
	}
	if err := c.WaitHealthy(ctx, "grpc", 90*time.Second); err != nil {
		t.Fatal(err)
	}
	second, _ := c.ContainerID(ctx, "grpc")
	if second == first || second == "" {
		t.Errorf("recreate kept container %s (now %q)", first, second)
	}

	// A one-off run returns the program's own exit status and output: --probe in a container
	// where no server listens must fail.
	stdout, stderr, code, err := c.Run(ctx, "grpc", project+"-probe", "", serverEnv, []string{"--probe"})
	if err != nil {
		t.Fatal(err)
	}
	if code == 0 {
		t.Errorf("probe without a server exited 0; stdout %q stderr %q", stdout, stderr)
	}
	if !strings.Contains(string(stderr), "probe") || strings.Contains(string(stderr), "Creating ") {
		t.Errorf("stderr should hold the probe's message and no compose progress: %q", stderr)
	}
	if out, _ := exec.Command("docker", "ps", "-a", "-q", "--filter", "name="+project+"-probe").Output(); len(bytes.TrimSpace(out)) != 0 {
		t.Errorf("one-off container left behind: %s", out)
	}

	// Another program of the same image, as wrk2 shares the wrk service.
	stdout, stderr, code, err = c.Run(ctx, "grpc", project+"-entry", "echo", serverEnv, []string{"entrypoint", "replaced"})
	if err != nil || code != 0 || strings.TrimSpace(string(stdout)) != "entrypoint replaced" {
		t.Errorf("run with entrypoint echo: code %d err %v stdout %q stderr %q", code, err, stdout, stderr)
	}

	// cAdvisor's CPU series for the server, through Prometheus, matched by the compose label.
	query := fmt.Sprintf(`container_cpu_usage_seconds_total{container_label_com_docker_compose_service="grpc",container_label_com_docker_compose_project=%q,cpu="total"}`, project)
	waitForSeries(ctx, t, promPort, query)
	waitForSeries(ctx, t, promPort, `up{job="servers",target="grpc"} == 1`)

	if err := c.Remove(ctx, "grpc"); err != nil {
		t.Fatal(err)
	}
	if id, _ := c.ContainerID(ctx, "grpc"); id != "" {
		t.Errorf("grpc container %s still there after Remove", id)
	}
}

// checkCaps verifies that compose turned the environment into the container's limits.
func checkCaps(ctx context.Context, t *testing.T, id string) {
	t.Helper()
	out, err := exec.CommandContext(ctx, "docker", "inspect", "--format",
		"{{.HostConfig.NanoCpus}} {{.HostConfig.CpuQuota}} {{.HostConfig.CpuPeriod}} {{.HostConfig.CpusetCpus}} {{.HostConfig.Memory}} {{range .HostConfig.Ulimits}}{{.Name}}={{.Soft}}{{end}} {{range .Config.Env}}{{.}},{{end}}", id).Output()
	if err != nil {
		t.Fatal(err)
	}
	fields := strings.Fields(string(out))
	if len(fields) < 7 {
		t.Fatalf("inspect: %q", out)
	}
	// v2 sets NanoCpus, v1 CpuQuota/CpuPeriod: either way half a core.
	nano, _ := strconv.ParseFloat(fields[0], 64)
	quota, _ := strconv.ParseFloat(fields[1], 64)
	period, _ := strconv.ParseFloat(fields[2], 64)
	if cores := nano / 1e9; cores != 0.5 && (period == 0 || quota/period != 0.5) {
		t.Errorf("cpus: NanoCpus %s, quota %s/%s; want 0.5 core", fields[0], fields[1], fields[2])
	}
	if fields[3] != "0" {
		t.Errorf("cpuset %q, want 0", fields[3])
	}
	if fields[4] != "268435456" {
		t.Errorf("memory %s, want 268435456", fields[4])
	}
	if fields[5] != "nofile=12345" {
		t.Errorf("ulimits %q, want nofile=12345 (PROTOBENCH_NOFILE)", fields[5])
	}
	envs := fields[6]
	if !strings.Contains(envs, "PROTOBENCH_GRPC_MAX_CONCURRENT_STREAMS=64,") {
		t.Errorf("knob not passed through: %s", envs)
	}
	// An unset knob reaches docker as a bare name, which the process never sees as a variable.
	if strings.Contains(envs, "PROTOBENCH_GRPC_READ_BUFFER_BYTES=") {
		t.Errorf("unset knob has a value in the container: %s", envs)
	}
}

// waitForSeries polls Prometheus until query returns at least one series.
func waitForSeries(ctx context.Context, t *testing.T, port int, query string) {
	t.Helper()
	deadline := time.Now().Add(90 * time.Second)
	u := fmt.Sprintf("http://127.0.0.1:%d/api/v1/query?query=%s", port, url.QueryEscape(query))
	last := ""
	for time.Now().Before(deadline) {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
		resp, err := http.DefaultClient.Do(req)
		if err == nil {
			var body struct {
				Status string `json:"status"`
				Data   struct {
					Result []json.RawMessage `json:"result"`
				} `json:"data"`
			}
			err = json.NewDecoder(resp.Body).Decode(&body)
			resp.Body.Close()
			if err == nil && len(body.Data.Result) > 0 {
				return
			}
			last = fmt.Sprintf("status %s, %d series", body.Status, len(body.Data.Result))
		} else {
			last = err.Error()
		}
		select {
		case <-ctx.Done():
			t.Fatal(ctx.Err())
		case <-time.After(time.Second):
		}
	}
	t.Fatalf("no series for %s (last: %s)", query, last)
}

func freePort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}
