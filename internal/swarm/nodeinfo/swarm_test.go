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
	"sort"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/protobench/protobench/internal/prom"
	"github.com/protobench/protobench/internal/swarm/nodeinfo"
	"github.com/protobench/protobench/internal/swarm/nodes"
	"github.com/protobench/protobench/internal/swarm/promconfig"
	"github.com/protobench/protobench/internal/swarm/swarmtest"
)

// TestSwarmObservability sets up by hand, with the docker CLI, what a swarm run sets up (the
// contract's labels, a global cAdvisor and node-exporter, one gRPC server, Prometheus on the
// manager with the rendered prometheus-swarm.yml as a swarm config), then checks two things on it:
// Prometheus finds every target through dockerswarm_sd with the compose job names and a node
// label, and nodeinfo.Collect describes the node and the overlay as they are.
func TestSwarmObservability(t *testing.T) {
	sw := swarmtest.Use(t)
	sw.RequireAlone(t)
	d := &dockerCLI{t: t, bin: sw.Docker}
	requireImages(t, d)
	hostname := d.must("info", "--format", "{{.Name}}")
	observe(t, d, layout{project: "pbtest-h3obs", nodes: map[string]string{sw.NodeID: hostname}, serverNode: sw.NodeID})
}

// TestSwarmObservabilityTwoNodes is the same with a second node (internal/swarm/nodes: a
// dockerd in its own network namespace, joined over a LAN of veth pairs) that runs the server:
// targets on both nodes, each with its own node label, and both nodes in nodeinfo.
func TestSwarmObservabilityTwoNodes(t *testing.T) {
	docker := swarmtest.Docker()
	requireImages(t, &dockerCLI{t: t, bin: docker})
	// Names and a LAN of its own, apart from the nodes package's and the e2e tests'.
	c, sw := nodes.Use(t, nodes.Options{Docker: docker, Name: "pbh3obs", HostAddr: "10.77.3.1"})
	node := c.Nodes[0]
	d := &dockerCLI{t: t, bin: sw.Docker}
	// The deadline starts now: Use may have waited for other packages' swarm tests.
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	start := time.Now()
	if err := node.LoadImages(ctx, "protobench/cadvisor:latest", "protobench/node-exporter:latest", "protobench/protobench:latest"); err != nil {
		t.Fatal(err)
	}
	t.Logf("images copied to %s in %s", node.Hostname, time.Since(start).Round(time.Second))
	hostname := d.must("info", "--format", "{{.Name}}")
	observe(t, d, layout{project: "pbtest-h3two", nodes: map[string]string{sw.NodeID: hostname, node.NodeID: node.Hostname}, serverNode: node.NodeID})
}

var images = []string{"protobench/cadvisor:latest", "protobench/node-exporter:latest", "protobench/protobench:latest", "protobench/prometheus:latest"}

func requireImages(t *testing.T, d *dockerCLI) {
	t.Helper()
	for _, img := range images {
		if _, err := d.try("image", "inspect", "--format", "{{.ID}}", img); err != nil {
			t.Skipf("%s missing (./run.sh images build): %v", img, err)
		}
	}
}

// layout is a test's swarm: its project (every object it creates carries
// protobench.project=project, and the cleanup removes exactly those), its nodes (ID to
// hostname; the manager is this machine's daemon) and the node the server is placed on.
type layout struct {
	project    string
	nodes      map[string]string
	serverNode string
}

// observe creates the services of l.project, checks Prometheus' targets and series and
// nodeinfo.Collect, and removes the project's objects at cleanup.
func observe(t *testing.T, d *dockerCLI, l layout) {
	project := l.project
	// Registered after the swarm's own cleanup, so it runs before the swarm is left.
	t.Cleanup(func() { swarmtest.RemoveProject(t, d.bin, project) })
	swarmtest.RemoveProject(t, d.bin, project) // leftovers of an interrupted run

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
		"--enable_metrics=cpu,memory")
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
	grpcArgs := []string{"--endpoint-mode", "dnsrr", "--constraint", "node.id==" + l.serverNode,
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
	// the server carry the compose service label as under compose, and the server's node.
	var all []string
	for _, h := range l.nodes {
		all = append(all, h)
	}
	sort.Strings(all)
	allNodes, serverHost := strings.Join(all, ","), l.nodes[l.serverNode]
	subnetPrefix := overlayPrefix(t, d, network)
	checks := []struct{ expr, what, nodes string }{
		{`up{job="cadvisor"} == 1`, "cAdvisor up", allNodes},
		{`up{job="node-exporter"} == 1`, "node-exporter up", allNodes},
		{`up{job="servers",target="grpc"} == 1`, "the gRPC server up as target grpc", serverHost},
		{`container_cpu_usage_seconds_total{container_label_com_docker_compose_service="grpc"}`, "the server's CPU from cAdvisor", serverHost},
		{`count by (node) (node_cpu_info{job="node-exporter"})`, "node_cpu_info", allNodes},
	}
	deadline := time.Now().Add(3 * time.Minute)
	for _, c := range checks {
		var got []prom.Sample
		var nodes string
		for {
			got, err = pc.Query(ctx, c.expr, time.Time{})
			nodes = nodesOf(got)
			if err == nil && nodes == c.nodes {
				break
			}
			if time.Now().After(deadline) {
				tasks, _ := d.try("service", "ps", "--no-trunc", project+"-cadvisor", project+"-node-exporter", project+"-grpc")
				t.Fatalf("%s: series of nodes %q after 3 minutes, want %q (%s: %v)\ntasks:\n%s\ntargets: %s", c.what, nodes, c.nodes, c.expr, err, tasks, activeTargets(ctx, url))
			}
			time.Sleep(time.Second)
		}
		for _, s := range got {
			if inst := s.Labels["instance"]; inst != "" && !strings.HasPrefix(inst, subnetPrefix) {
				t.Errorf("%s: instance %s is not on the overlay %s (%s*)", c.what, inst, network, subnetPrefix)
			}
		}
		t.Logf("%s: nodes %s, e.g. %v", c.what, nodes, got[0].Labels)
	}
	// One target per task and network: nothing from docker_gwbridge or ingress.
	for job, want := range map[string]int{"cadvisor": len(l.nodes), "node-exporter": len(l.nodes), "servers": 1, "loadgen": 0} {
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

	// nodeinfo on the same set-up. Every node is this machine (the second one a dockerd in a
	// namespace), so kernel, CPU and Docker are this machine's.
	sws, err := nodeinfo.Collect(ctx, nodeinfo.Options{Docker: d.bin, PrometheusURL: url, Network: network})
	if err != nil {
		t.Fatal(err)
	}
	b, _ := json.MarshalIndent(sws, "", "  ")
	t.Logf("nodeinfo.Collect:\n%s", b)
	if len(sws.Nodes) != len(l.nodes) {
		t.Fatalf("%d nodes, want %d", len(sws.Nodes), len(l.nodes))
	}
	kernel, _ := os.ReadFile("/proc/sys/kernel/osrelease")
	for _, n := range sws.Nodes {
		role := "worker"
		if n.ID == d.must("info", "--format", "{{.Swarm.NodeID}}") {
			role = "manager"
		}
		want := nodeinfo.Node{
			ID: n.ID, Hostname: l.nodes[n.ID], Role: role, Labels: n.Labels,
			CPUModel: cpuModel(t), Cores: runtime.NumCPU(), MemoryBytes: n.MemoryBytes,
			Kernel: strings.TrimSpace(string(kernel)), DockerVersion: d.must("version", "--format", "{{.Server.Version}}"),
			OS: "linux", Arch: d.must("info", "--format", "{{.Architecture}}"),
		}
		if !reflect.DeepEqual(n, want) {
			t.Errorf("node:\n got  %+v\n want %+v", n, want)
		}
		if n.MemoryBytes <= 0 {
			t.Errorf("node %s: memory %d", n.Hostname, n.MemoryBytes)
		}
	}
	taskMTU := interfaceMTU(t, d, project+"-prometheus", network)
	wantNet := nodeinfo.Network{Name: network, Driver: "overlay", MTU: taskMTU, Subnet: d.must("network", "inspect", "--format", "{{range .IPAM.Config}}{{.Subnet}}{{end}}", network)}
	if sws.Network != wantNet {
		t.Errorf("network: got %+v, want %+v (MTU read in Prometheus' task)", sws.Network, wantNet)
	}
}

// nodesOf is the sorted, comma-joined node labels of samples.
func nodesOf(samples []prom.Sample) string {
	var ns []string
	for _, s := range samples {
		ns = append(ns, s.Labels["node"])
	}
	sort.Strings(ns)
	return strings.Join(ns, ",")
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
