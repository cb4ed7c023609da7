package nodeinfo_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/protobench/protobench/internal/prom"
	"github.com/protobench/protobench/internal/swarm/nodeinfo"
	"github.com/protobench/protobench/internal/swarm/promconfig"
	"github.com/protobench/protobench/internal/swarm/swarmtest"
)

// project is this test's own: every object it creates carries protobench.project=project, and
// the cleanup removes exactly those.
const project = "pbtest-h3obs"

// TestSwarmObservability sets up by hand, with the docker CLI, what a swarm run sets up (the
// contract's labels, a global cAdvisor and node-exporter, one gRPC server, Prometheus on the
// manager with the rendered prometheus-swarm.yml as a swarm config), then checks two things on it:
// Prometheus finds every target through dockerswarm_sd with the compose job names and a node
// label, and nodeinfo.Collect describes the node and the overlay as they are.
func TestSwarmObservability(t *testing.T) {
	sw := swarmtest.Use(t)
	d := &dockerCLI{t: t, bin: sw.Docker}
	for _, img := range []string{"protobench/cadvisor:latest", "protobench/node-exporter:latest", "protobench/protobench:latest", "protobench/prometheus:latest"} {
		if _, err := d.try("image", "inspect", "--format", "{{.ID}}", img); err != nil {
			t.Skipf("%s missing (./run.sh images build): %v", img, err)
		}
	}
	// Registered after Use's own cleanup, so it runs before the swarm is left.
	t.Cleanup(func() { removeProject(t, d) })
	removeProject(t, d) // leftovers of an interrupted run

	network := project + "-net"
	d.must("network", "create", "--driver", "overlay", "--attachable", "--label", "protobench.project="+project, network)
	// service creates <project>-<name> with the contract's service and container labels.
	service := func(name, networkAttachment string, args ...string) {
		base := []string{"service", "create", "--detach", "--no-resolve-image",
			"--name", project + "-" + name, "--network", networkAttachment,
			"--label", "protobench.project=" + project,
			"--container-label", "protobench.project=" + project,
			"--container-label", "com.docker.compose.project=" + project,
			"--container-label", "com.docker.compose.service=" + name}
		d.must(append(base, args...)...)
	}
	service("cadvisor", network, "--mode", "global",
		"--label", "protobench.scrape=cadvisor", "--label", "protobench.scrape.port=8080",
		"--mount", "type=bind,source=/,target=/rootfs,readonly",
		"--mount", "type=bind,source=/var/run/docker.sock,target=/var/run/docker.sock,readonly",
		"--mount", "type=bind,source=/sys,target=/sys,readonly",
		"--mount", "type=bind,source=/var/lib/docker,target=/var/lib/docker,readonly",
		"protobench/cadvisor:latest",
		"--port=8080", "--housekeeping_interval=1s", "--max_housekeeping_interval=2s",
		"--allow_dynamic_housekeeping=false", "--docker_only=true", "--store_container_labels=true",
		"--enable_metrics=cpu,memory,network,diskIO")
	// --collector.cpu.info gives node_cpu_info (the CPU model); the node's hostname as the
	// container's makes node_uname_info's nodename that of the node.
	service("node-exporter", network, "--mode", "global", "--hostname", "{{.Node.Hostname}}",
		"--label", "protobench.scrape=node-exporter", "--label", "protobench.scrape.port=9100",
		"--mount", "type=bind,source=/proc,target=/host/proc,readonly",
		"--mount", "type=bind,source=/sys,target=/host/sys,readonly",
		"--mount", "type=bind,source=/,target=/rootfs,readonly",
		"protobench/node-exporter:latest",
		"--path.procfs=/host/proc", "--path.sysfs=/host/sys", "--path.rootfs=/rootfs", "--collector.cpu.info")
	// The server as compose/servers.yml runs it, reachable as grpc:50051 (dnsrr, alias grpc).
	grpcArgs := []string{"--endpoint-mode", "dnsrr",
		"--label", "protobench.scrape=servers", "--label", "protobench.scrape.port=9100",
		"--container-label", "protobench.role=server", "--container-label", "protobench.target=grpc",
		"--limit-cpu", "1", "--limit-memory", "1g",
		"--env", "PROTOBENCH_LISTEN=:50051", "--env", "PROTOBENCH_METRICS_LISTEN=:9100",
		"--entrypoint", "/usr/local/bin/protobench-grpc-server",
		"protobench/protobench:latest"}
	service("grpc", "name="+network+",alias=grpc", grpcArgs...)

	// Prometheus: the rendered config as a swarm config, the docker socket for discovery (the
	// image runs as nobody: the socket's group is added), on the manager.
	cfg, err := promconfig.Render(project, network)
	if err != nil {
		t.Fatal(err)
	}
	cfgFile := filepath.Join(t.TempDir(), "prometheus.yml")
	if err := os.WriteFile(cfgFile, cfg, 0o644); err != nil {
		t.Fatal(err)
	}
	d.must("config", "create", "--label", "protobench.project="+project, project+"-prometheus", cfgFile)
	sock, err := os.Stat("/var/run/docker.sock")
	if err != nil {
		t.Fatal(err)
	}
	sockGID := strconv.Itoa(int(sock.Sys().(*syscall.Stat_t).Gid))
	service("prometheus", network, "--constraint", "node.role==manager",
		"--config", "source="+project+"-prometheus,target=/etc/prometheus/prometheus.yml",
		"--mount", "type=bind,source=/var/run/docker.sock,target=/var/run/docker.sock,readonly",
		"--group", sockGID,
		"protobench/prometheus:latest",
		"--config.file=/etc/prometheus/prometheus.yml", "--storage.tsdb.path=/prometheus")

	url := prometheusURL(t, d, project+"-prometheus")
	t.Logf("Prometheus at %s (its address on docker_gwbridge)", url)
	pc := prom.New(url)
	ctx := context.Background()

	// Every job finds its targets, up, on the overlay, with the node label; cAdvisor's series of
	// the server carry the compose service label as under compose, and the node.
	hostname := d.must("info", "--format", "{{.Name}}")
	subnetPrefix := overlayPrefix(t, d, network)
	checks := []struct{ expr, what string }{
		{`up{job="cadvisor"} == 1`, "cAdvisor up"},
		{`up{job="node-exporter"} == 1`, "node-exporter up"},
		{`up{job="servers",target="grpc"} == 1`, "the gRPC server up as target grpc"},
		{`container_cpu_usage_seconds_total{container_label_com_docker_compose_service="grpc",node!=""}`, "the server's CPU from cAdvisor with a node label"},
		{`node_cpu_info{job="node-exporter"}`, "node_cpu_info"},
	}
	deadline := time.Now().Add(3 * time.Minute)
	for _, c := range checks {
		var got []prom.Sample
		for {
			got, err = pc.Query(ctx, c.expr, time.Time{})
			if err == nil && len(got) > 0 {
				break
			}
			if time.Now().After(deadline) {
				targets, _ := d.try("service", "ps", "--no-trunc", "--filter", "desired-state=running", project+"-cadvisor", project+"-node-exporter", project+"-grpc")
				t.Fatalf("no %s after 3 minutes (%s: %v)\ntasks:\n%s\ntargets: %s", c.what, c.expr, err, targets, activeTargets(ctx, url))
			}
			time.Sleep(time.Second)
		}
		for _, s := range got {
			if s.Labels["node"] != hostname {
				t.Errorf("%s: node=%q, want %q (%v)", c.what, s.Labels["node"], hostname, s.Labels)
			}
			if inst := s.Labels["instance"]; inst != "" && !strings.HasPrefix(inst, subnetPrefix) {
				t.Errorf("%s: instance %s is not on the overlay %s (%s*)", c.what, inst, network, subnetPrefix)
			}
		}
		t.Logf("%s: %d series, e.g. %v", c.what, len(got), got[0].Labels)
	}
	// One target per task and network: exactly one per job on a single node, nothing from
	// docker_gwbridge, ingress or the published port.
	for job, want := range map[string]int{"cadvisor": 1, "node-exporter": 1, "servers": 1, "loadgen": 0} {
		got, err := pc.Query(ctx, `up{job="`+job+`"}`, time.Time{})
		if err != nil {
			t.Fatal(err)
		}
		if len(got) != want {
			t.Errorf("job %s: %d targets, want %d: %v", job, len(got), want, got)
		}
	}
	// Only running tasks are targets: once the server's service is gone (its task shut down), so
	// is its target, at the next discovery refresh (5 s).
	d.must("service", "rm", project+"-grpc")
	for gone := time.Now().Add(30 * time.Second); ; time.Sleep(time.Second) {
		got, err := pc.Query(ctx, `up{job="servers"}`, time.Time{})
		if err == nil && len(got) == 0 {
			break
		}
		if time.Now().After(gone) {
			t.Fatalf("the removed server is still a target 30 s later: %v %v", got, err)
		}
	}
	service("grpc", "name="+network+",alias=grpc", grpcArgs...)

	// nodeinfo on the same set-up.
	sws, err := nodeinfo.Collect(ctx, nodeinfo.Options{Docker: sw.Docker, PrometheusURL: url, Network: network})
	if err != nil {
		t.Fatal(err)
	}
	b, _ := json.MarshalIndent(sws, "", "  ")
	t.Logf("nodeinfo.Collect:\n%s", b)
	if len(sws.Nodes) != 1 {
		t.Fatalf("%d nodes, want the single node", len(sws.Nodes))
	}
	n := sws.Nodes[0]
	kernel, _ := os.ReadFile("/proc/sys/kernel/osrelease")
	want := nodeinfo.Node{
		ID: sw.NodeID, Hostname: hostname, Role: "manager", Labels: n.Labels,
		CPUModel: cpuModel(t), Cores: runtime.NumCPU(), MemoryBytes: n.MemoryBytes,
		Kernel: strings.TrimSpace(string(kernel)), DockerVersion: d.must("version", "--format", "{{.Server.Version}}"),
		OS: "linux", Arch: d.must("info", "--format", "{{.Architecture}}"),
	}
	if !reflect.DeepEqual(n, want) {
		t.Errorf("node:\n got  %+v\n want %+v", n, want)
	}
	if n.MemoryBytes <= 0 {
		t.Errorf("memory %d", n.MemoryBytes)
	}
	taskMTU := interfaceMTU(t, d, project+"-grpc", network)
	wantNet := nodeinfo.Network{Name: network, Driver: "overlay", MTU: taskMTU, Subnet: d.must("network", "inspect", "--format", "{{range .IPAM.Config}}{{.Subnet}}{{end}}", network)}
	if sws.Network != wantNet {
		t.Errorf("network: got %+v, want %+v (MTU read in the server's task)", sws.Network, wantNet)
	}
}

// prometheusURL waits for the service's one task to run and returns its address on
// docker_gwbridge, where the host reaches it without a published port, once Prometheus is ready.
func prometheusURL(t *testing.T, d *dockerCLI, service string) string {
	t.Helper()
	deadline := time.Now().Add(2 * time.Minute)
	var last string
	for time.Now().Before(deadline) {
		id, err := d.try("ps", "-q", "--no-trunc", "--filter", "label=com.docker.swarm.service.name="+service)
		if err == nil && id != "" {
			id = strings.Fields(id)[0]
			ip, err := d.try("network", "inspect", "--format", `{{range $id, $c := .Containers}}{{if eq $id "`+id+`"}}{{$c.IPv4Address}}{{end}}{{end}}`, "docker_gwbridge")
			if err == nil && ip != "" {
				url := "http://" + strings.Split(ip, "/")[0] + ":9090"
				ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
				err = prom.New(url).Ready(ctx)
				cancel()
				if err == nil {
					return url
				}
				last = err.Error()
			} else {
				last = fmt.Sprintf("container %s not on docker_gwbridge yet (%v)", id, err)
			}
		} else {
			last = fmt.Sprintf("no running task (%v)", err)
		}
		time.Sleep(time.Second)
	}
	ps, _ := d.try("service", "ps", "--no-trunc", service)
	t.Fatalf("Prometheus not reachable on docker_gwbridge after 2 minutes: %s\n%s", last, ps)
	return ""
}

// overlayPrefix is the network's IPv4 subnet as a text prefix (a /24 here: "10.0.1.").
func overlayPrefix(t *testing.T, d *dockerCLI, network string) string {
	t.Helper()
	subnet := d.must("network", "inspect", "--format", "{{range .IPAM.Config}}{{.Subnet}}{{end}}", network)
	if !strings.HasSuffix(subnet, ".0/24") {
		t.Fatalf("overlay subnet %s: the test expects Docker's default /24", subnet)
	}
	return strings.TrimSuffix(subnet, "0/24")
}

// interfaceMTU reads the MTU of the task's interface on network inside the service's container,
// found by the MAC address Docker gave the endpoint.
func interfaceMTU(t *testing.T, d *dockerCLI, service, network string) int {
	t.Helper()
	var id string
	for deadline := time.Now().Add(time.Minute); id == ""; time.Sleep(500 * time.Millisecond) {
		if ids := strings.Fields(d.must("ps", "-q", "--filter", "label=com.docker.swarm.service.name="+service)); len(ids) > 0 {
			id = ids[0]
		} else if time.Now().After(deadline) {
			t.Fatalf("no running container of %s after a minute", service)
		}
	}
	mac := d.must("inspect", "--format", `{{(index .NetworkSettings.Networks "`+network+`").MacAddress}}`, id)
	out := d.must("exec", id, "sh", "-c", `for i in /sys/class/net/*; do echo "$(cat $i/address) $(cat $i/mtu) ${i##*/}"; done`)
	for _, line := range strings.Split(out, "\n") {
		f := strings.Fields(line)
		if len(f) == 3 && f[0] == mac {
			mtu, err := strconv.Atoi(f[1])
			if err != nil {
				t.Fatal(err)
			}
			t.Logf("task's interface on %s: %s, MTU %d", network, f[2], mtu)
			return mtu
		}
	}
	t.Fatalf("no interface with MAC %s in the task:\n%s", mac, out)
	return 0
}

// cpuModel is /proc/cpuinfo's first model name, what node-exporter reports for the host.
func cpuModel(t *testing.T) string {
	t.Helper()
	f, err := os.Open("/proc/cpuinfo")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if k, v, ok := strings.Cut(sc.Text(), ":"); ok && strings.TrimSpace(k) == "model name" {
			return strings.TrimSpace(v)
		}
	}
	return ""
}

// activeTargets is Prometheus' view of its targets, for a failure message.
func activeTargets(ctx context.Context, url string) string {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url+"/api/v1/targets?state=active", nil)
	if err != nil {
		return err.Error()
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err.Error()
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return string(b)
}

// removeProject removes the services, then the config and the network, that carry the test's
// project label, and nothing else.
func removeProject(t *testing.T, d *dockerCLI) {
	t.Helper()
	filter := "label=protobench.project=" + project
	if ids, _ := d.try("service", "ls", "-q", "--filter", filter); ids != "" {
		if _, err := d.try(append([]string{"service", "rm"}, strings.Fields(ids)...)...); err != nil {
			t.Error(err)
		}
	}
	// The services' containers go asynchronously; the network can only go after them.
	for i := 0; i < 60; i++ {
		if ids, _ := d.try("ps", "-aq", "--filter", filter); ids == "" {
			break
		}
		time.Sleep(500 * time.Millisecond)
	}
	if ids, _ := d.try("config", "ls", "-q", "--filter", filter); ids != "" {
		if _, err := d.try(append([]string{"config", "rm"}, strings.Fields(ids)...)...); err != nil {
			t.Error(err)
		}
	}
	var last error
	for i := 0; i < 40; i++ {
		ids, _ := d.try("network", "ls", "-q", "--filter", filter)
		if ids == "" {
			return
		}
		if _, last = d.try(append([]string{"network", "rm"}, strings.Fields(ids)...)...); last == nil {
			return
		}
		time.Sleep(500 * time.Millisecond)
	}
	t.Errorf("network of project %s not removed: %v", project, last)
}

// dockerCLI runs the docker CLI for the test.
type dockerCLI struct {
	t   *testing.T
	bin string
}

func (d *dockerCLI) try(args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	out, err := exec.CommandContext(ctx, d.bin, args...).CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("docker %s: %w: %s", strings.Join(args, " "), err, strings.TrimSpace(string(out)))
	}
	return strings.TrimSpace(string(out)), nil
}

func (d *dockerCLI) must(args ...string) string {
	d.t.Helper()
	out, err := d.try(args...)
	if err != nil {
		d.t.Fatal(err)
	}
	return out
}
