package obsbench

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/protobench/protobench/internal/images"
)

// stack is the observability containers of one benchmark, on the host network so that Prometheus
// reaches the native server and generator at 127.0.0.1. Every container carries the label
// protobench.obsbench=<this process's pid>, by which they are removed.
type stack struct {
	promAddr   string
	containers map[string]string // name -> container id
	switched   []string          // the containers set switches; nil: all
	label      string
	settings   []string // what the stack ran with, one line each, for the output and settings.txt
}

func startStack(ctx context.Context, root string, o options, set images.Set, serverMetrics, loadMetrics string) (*stack, error) {
	obs, err := readObservability(root)
	if err != nil {
		return nil, err
	}
	for _, name := range []string{images.Prometheus, images.Cadvisor, images.NodeExporter} {
		if !set.Available(name) {
			return nil, fmt.Errorf("image %s is unavailable (%s): run `protobench images build %s`", name, set[name].Note, name)
		}
	}
	var addrs [3]string
	for i := range addrs {
		a, err := freeAddr()
		if err != nil {
			return nil, err
		}
		addrs[i] = a
	}
	promAddr, cadvisorAddr, nodeAddr := addrs[0], addrs[1], addrs[2]
	_, cadvisorPort, _ := strings.Cut(cadvisorAddr, ":")
	st := &stack{promAddr: promAddr, containers: map[string]string{}, switched: o.switched, label: "protobench.obsbench=" + strconv.Itoa(os.Getpid())}

	// compose/prometheus/prometheus.yml's jobs and intervals, each job pointed at this
	// benchmark's process or container.
	config, err := obs.scrape.prometheusConfig(o.scrapeInterval, map[string]string{
		"prometheus": promAddr, "cadvisor": cadvisorAddr, "node-exporter": nodeAddr, "servers": serverMetrics, "loadgen": loadMetrics,
	}, map[string]map[string]string{"servers": {"target": "grpc"}})
	if err != nil {
		return nil, err
	}
	st.settings = append(st.settings, "Prometheus configuration (from compose/prometheus/prometheus.yml): "+filepath.Join(o.outDir, "prometheus.yml"))
	configPath := filepath.Join(o.outDir, "prometheus.yml")
	if err := os.WriteFile(configPath, []byte(config), 0o644); err != nil {
		return nil, err
	}
	absConfig, err := filepath.Abs(configPath)
	if err != nil {
		return nil, err
	}
	// common is every container's docker run flags: where it runs and how much CPU weight it
	// has against the generator on a shared core (compose's cpu_shares, or --cpu-shares).
	common := func(service string) []string {
		args := []string{"run", "-d", "--network", "host", "--label", st.label}
		if o.obsCPUs != "" {
			args = append(args, "--cpuset-cpus", o.obsCPUs)
		}
		shares := obs.cpuShares[service]
		if o.cpuShares > 0 {
			shares = o.cpuShares
		}
		if shares > 0 {
			args = append(args, "--cpu-shares", strconv.Itoa(shares))
		}
		return args
	}
	specs := []struct {
		name string
		args []string
	}{
		// Every service runs with the compose file's flags, but for its port, its files (the
		// retention's compose variable does not matter for minutes of data) and cAdvisor's
		// housekeeping interval, which this benchmark varies.
		{"prometheus", append(append(common("prometheus"), "-v", absConfig+":/etc/prometheus/prometheus.yml:ro", set[images.Prometheus].Ref),
			withFlags(obs.promFlags, map[string]string{
				"--config.file": "/etc/prometheus/prometheus.yml", "--storage.tsdb.path": "/prometheus",
				"--storage.tsdb.retention.time": "1d", "--web.listen-address": promAddr})...)},
		{"cadvisor", append(append(common("cadvisor"),
			"-v", "/:/rootfs:ro", "-v", "/var/run:/var/run:ro", "-v", "/sys:/sys:ro", "-v", "/var/lib/docker/:/var/lib/docker:ro",
			set[images.Cadvisor].Ref), withFlags(obs.cadvisorFlags, map[string]string{
			"--port": cadvisorPort, "--housekeeping_interval": o.housekeeping, "--max_housekeeping_interval": doubled(o.housekeeping)})...)},
		{"node-exporter", append(append(common("node-exporter"),
			"-v", "/proc:/host/proc:ro", "-v", "/sys:/host/sys:ro", "-v", "/:/rootfs:ro", set[images.NodeExporter].Ref),
			withFlags(obs.nodeFlags, map[string]string{"--web.listen-address": nodeAddr})...)},
	}
	for _, sp := range specs {
		st.settings = append(st.settings, "docker "+strings.Join(sp.args, " "))
		out, err := docker(ctx, sp.args...)
		if err != nil {
			st.remove()
			return nil, fmt.Errorf("start %s: %w", sp.name, err)
		}
		st.containers[sp.name] = strings.TrimSpace(out)
	}
	for name, url := range map[string]string{"prometheus": "http://" + promAddr + "/-/ready", "cadvisor": "http://" + cadvisorAddr + "/healthz", "node-exporter": "http://" + nodeAddr + "/metrics"} {
		if err := waitHTTP(ctx, url, 60*time.Second, nil); err != nil {
			st.remove()
			return nil, fmt.Errorf("%s: %w", name, err)
		}
	}
	return st, nil
}

// doubled is twice a duration given as a string (cAdvisor's max housekeeping interval).
func doubled(d string) string {
	v, err := time.ParseDuration(d)
	if err != nil {
		return d
	}
	return (2 * v).String()
}

// stackServices are the stack's containers, by their compose service names.
var stackServices = []string{"prometheus", "cadvisor", "node-exporter"}

// set runs (on) or freezes (off) the stack's switched containers; the others are left running.
func (s *stack) set(ctx context.Context, on bool) error {
	for name, id := range s.containers {
		run := on || (s.switched != nil && !slices.Contains(s.switched, name))
		verb := "pause"
		if run {
			verb = "unpause"
		}
		paused, err := docker(ctx, "inspect", "-f", "{{.State.Paused}}", id)
		if err != nil {
			return fmt.Errorf("%s: %w", name, err)
		}
		if (strings.TrimSpace(paused) == "true") == !run {
			continue
		}
		if _, err := docker(ctx, verb, id); err != nil {
			return fmt.Errorf("%s %s: %w", verb, name, err)
		}
	}
	return nil
}

// cpu is each container's CPU time so far in nanoseconds, from its cgroup (v1 cpuacct or v2
// cpu.stat); a container whose cgroup cannot be read is left out.
func (s *stack) cpu() map[string]int64 {
	out := map[string]int64{}
	for name, id := range s.containers {
		if ns, ok := cgroupCPU(id); ok {
			out[name] = ns
		}
	}
	return out
}

func cgroupCPU(id string) (int64, bool) {
	for _, p := range []string{
		"/sys/fs/cgroup/cpuacct/docker/" + id + "/cpuacct.usage",
		"/sys/fs/cgroup/cpu,cpuacct/docker/" + id + "/cpuacct.usage",
	} {
		if b, err := os.ReadFile(p); err == nil {
			if v, err := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64); err == nil {
				return v, true
			}
		}
	}
	for _, p := range []string{
		"/sys/fs/cgroup/system.slice/docker-" + id + ".scope/cpu.stat",
		"/sys/fs/cgroup/docker/" + id + "/cpu.stat",
	} {
		b, err := os.ReadFile(p)
		if err != nil {
			continue
		}
		for _, line := range strings.Split(string(b), "\n") {
			if v, ok := strings.CutPrefix(line, "usage_usec "); ok {
				if us, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64); err == nil {
					return us * 1000, true
				}
			}
		}
	}
	return 0, false
}

// remove deletes the stack's containers, found by this process's label.
func (s *stack) remove() {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	ids, err := docker(ctx, "ps", "-aq", "--filter", "label="+s.label)
	if err != nil {
		return
	}
	if f := strings.Fields(ids); len(f) > 0 {
		_, _ = docker(ctx, append([]string{"rm", "-f"}, f...)...)
	}
}

func docker(ctx context.Context, args ...string) (string, error) {
	out, _, err := dockerLog(ctx, args...)
	if err != nil {
		return "", err
	}
	return out, nil
}

// dockerLog runs the docker CLI and returns its stdout and stderr whatever the outcome, for a
// caller that keeps the log of what it ran (k6's warnings are on its stderr).
func dockerLog(ctx context.Context, args ...string) (stdout, stderr string, err error) {
	cmd := exec.CommandContext(ctx, "docker", args...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		return out.String(), errb.String(), fmt.Errorf("docker %s: %v: %s", strings.Join(args[:min(len(args), 2)], " "), err, strings.TrimSpace(errb.String()))
	}
	return out.String(), errb.String(), nil
}

func numCPU() int { return runtime.NumCPU() }
