package obsbench

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/protobench/protobench/bench/internal/hostproc"
	"github.com/protobench/protobench/internal/compose"
	"github.com/protobench/protobench/internal/engine"
	"github.com/protobench/protobench/internal/images"
	"github.com/protobench/protobench/internal/scenario"
	"github.com/protobench/protobench/internal/tool"
)

// stack is the observability stack of one benchmark and the engine that runs it and the load
// tool: the Compose engine with its docker-CLI fast path, on a compose project of this process's
// own (protobench-obsbench-<pid>), whose removal takes every container and volume of it.
type stack struct {
	eng      engine.Engine // engine.NewCompose with Fast: the docker-CLI fast path (engine.ComposeFast)
	client   *compose.Client
	env      map[string]string // the run-wide compose environment, given to Up
	promAddr string
	// loadMetrics is where the generator serves its live metrics, for Prometheus' loadgen job.
	loadMetrics string
	containers  map[string]string // service -> container id
	switched    []string          // the containers set switches; nil: all
	settings    []string          // what the stack ran with, one line each, for the output and settings.txt
}

// stackServices are the stack's containers, by their compose service names.
var stackServices = []string{"prometheus", "cadvisor", "node-exporter"}

// projectName is the compose project of this process's stack and tool containers.
func projectName() string { return "protobench-obsbench-" + strconv.Itoa(os.Getpid()) }

// startStack starts the stack on compose project projectName(), its scrape jobs pointed at
// serverMetrics and at the generator, and waits until each of its containers answers.
func startStack(ctx context.Context, root string, o options, set images.Set, serverMetrics string) (*stack, error) {
	obs, err := readObservability(root)
	if err != nil {
		return nil, err
	}
	a, ok := tool.Lookup(o.tool)
	if !ok {
		return nil, fmt.Errorf("no %s adapter in this build", o.tool)
	}
	for _, name := range []string{images.Prometheus, images.Cadvisor, images.NodeExporter, a.Capabilities().Image} {
		if !set.Available(name) {
			return nil, fmt.Errorf("image %s is unavailable (%s): run `protobench images build %s`", name, set[name].Note, name)
		}
	}
	files, err := writeStackFiles(obs, o, a.Service(), serverMetrics)
	if err != nil {
		return nil, err
	}
	client, err := compose.New(ctx, compose.Options{Dir: filepath.Join(root, "compose"), Extra: []string{files.override},
		ProjectName: projectName()})
	if err != nil {
		return nil, err
	}
	st := &stack{client: client, eng: engine.NewCompose(engine.ComposeOptions{Client: client, Docker: "docker", Fast: true}),
		env: stackEnv(o, set, files.outDir), promAddr: files.addrs.prometheus, loadMetrics: files.loadMetrics, containers: map[string]string{}, switched: o.switched}
	st.settings = append(st.settings,
		"Prometheus configuration (from compose/prometheus/prometheus.yml): "+files.prometheusConfig,
		fmt.Sprintf("compose project %s: compose/docker-compose.yml with %s over it", client.ProjectName(), files.override))
	if err := st.eng.Up(ctx, st.env, stackServices...); err != nil {
		st.remove()
		return nil, fmt.Errorf("start the stack: %w", err)
	}
	if err := st.await(ctx, files.addrs); err != nil {
		st.remove()
		return nil, err
	}
	return st, nil
}

// stackFiles are the files a stack starts from, in the raw folder, and the host addresses they
// give its containers and the generator.
type stackFiles struct {
	addrs       stackAddrs
	loadMetrics string // where the generator serves its live metrics
	outDir      string // the raw folder, absolute
	// prometheusConfig is the stack's Prometheus configuration, override its compose file over
	// compose/docker-compose.yml.
	prometheusConfig, override string
}

// writeStackFiles picks free host ports and writes the stack's Prometheus configuration
// (compose/prometheus/prometheus.yml's jobs and intervals, each job pointed at this benchmark's
// process or container) and its compose override for toolService.
func writeStackFiles(obs observability, o options, toolService, serverMetrics string) (stackFiles, error) {
	var f stackFiles
	hostAddrs, err := hostproc.FreeAddrs(4)
	if err != nil {
		return f, err
	}
	f.addrs = stackAddrs{prometheus: hostAddrs[0], cadvisor: hostAddrs[1], nodeExporter: hostAddrs[2]}
	f.loadMetrics = hostAddrs[3]
	if f.outDir, err = filepath.Abs(o.outDir); err != nil {
		return f, err
	}
	config, err := obs.scrape.prometheusConfig(o.scrapeInterval, map[string]string{
		"prometheus": f.addrs.prometheus, "cadvisor": f.addrs.cadvisor, "node-exporter": f.addrs.nodeExporter, "servers": serverMetrics, "loadgen": f.loadMetrics,
	}, map[string]map[string]string{"servers": {"target": "grpc"}})
	if err != nil {
		return f, err
	}
	f.prometheusConfig = filepath.Join(f.outDir, "prometheus.yml")
	if err := os.WriteFile(f.prometheusConfig, []byte(config), 0o644); err != nil {
		return f, err
	}
	over, err := overrides(obs, o, f.addrs, f.prometheusConfig, toolService)
	if err != nil {
		return f, err
	}
	f.override = filepath.Join(f.outDir, "compose-override.yml")
	return f, os.WriteFile(f.override, over, 0o644)
}

// await records the stack's container IDs, waits until each container answers at addrs, and
// adds to the settings what docker inspect reads back of each.
func (s *stack) await(ctx context.Context, addrs stackAddrs) error {
	for _, name := range stackServices {
		id, err := s.client.ContainerID(ctx, name)
		if err == nil && id == "" {
			err = fmt.Errorf("compose started no container")
		}
		if err != nil {
			return fmt.Errorf("%s: %w", name, err)
		}
		s.containers[name] = id
	}
	for name, url := range map[string]string{"prometheus": "http://" + addrs.prometheus + "/-/ready", "cadvisor": "http://" + addrs.cadvisor + "/healthz", "node-exporter": "http://" + addrs.nodeExporter + "/metrics"} {
		if err := hostproc.WaitHTTP(ctx, url, 60*time.Second, nil); err != nil {
			return fmt.Errorf("%s: %w", name, err)
		}
	}
	for _, name := range stackServices {
		line, err := containerSettings(ctx, s.containers[name])
		if err != nil {
			return fmt.Errorf("%s: %w", name, err)
		}
		s.settings = append(s.settings, name+" (started by compose; as docker inspect reads it back): "+line)
	}
	return nil
}

// stackEnv is the run-wide compose environment: the images, where the stack sits, and the load
// tool's core, 1-cpu cap, memory cap (a run's default, and k6's soft heap limit under it), user and
// raw folder (outDir).
func stackEnv(o options, set images.Set, outDir string) map[string]string {
	env := images.EnvVars(set)
	for k, v := range map[string]string{
		"PROTOBENCH_OBS_CPUSET":        o.obsCPUs,
		"PROTOBENCH_CLIENT_CPUSET":     strconv.Itoa(o.clientCore),
		"PROTOBENCH_CLIENT_CPUS":       "1",
		"PROTOBENCH_CLIENT_MEM":        strconv.FormatInt(scenario.DefaultClientMemoryBytes, 10),
		"PROTOBENCH_CLIENT_GOMEMLIMIT": strconv.FormatInt(tool.GoMemLimit(scenario.DefaultClientMemoryBytes), 10),
		"PROTOBENCH_TOOL_USER":         fmt.Sprintf("%d:%d", os.Getuid(), os.Getgid()),
		"PROTOBENCH_RAW_DIR":           outDir,
	} {
		env[k] = v
	}
	return env
}

// toolRun is one run of the load tool: a one-off container of its compose service, named name
// (unique in the project), with env on top of the run-wide environment.
type toolRun struct {
	service, name, entrypoint string
	env                       map[string]string
	args                      []string
	limit                     time.Duration // the whole run's bound
}

// run runs the tool through the engine (its fast path) and returns its output; a tool that
// exits non-zero is an error.
func (s *stack) run(ctx context.Context, t toolRun) (stdout, stderr []byte, err error) {
	stdout, stderr, code, err := s.eng.Run(ctx, engine.OneOff{Service: t.service, Name: t.name, Entrypoint: t.entrypoint, Env: t.env, Args: t.args, Limit: t.limit})
	if err == nil && code != 0 {
		err = fmt.Errorf("%s exited with %d: %s", t.service, code, tool.LastLine(stderr))
	}
	return stdout, stderr, err
}

// note adds the docker command line the engine's fast path runs for t (rendered by the same
// code) to the settings, and rewrites settings.txt in dir. It renders the service ahead of the
// run, too, so that compose's rendering does not fall in a measured trial.
func (s *stack) note(ctx context.Context, t toolRun, what, dir string, stdout io.Writer) error {
	merged := map[string]string{}
	for _, m := range []map[string]string{s.env, t.env} {
		for k, v := range m {
			merged[k] = v
		}
	}
	spec, err := s.client.ServiceSpec(ctx, t.service, merged)
	if err != nil {
		return err
	}
	line := what + " (started by the engine's fast path): docker " +
		strings.Join(s.client.DockerArgs(compose.FastContainer{Service: spec, Name: t.name, Entrypoint: t.entrypoint, Env: merged, Args: t.args, OneOff: true}), " ")
	fmt.Fprintln(stdout, "  "+line)
	s.settings = append(s.settings, line)
	return s.writeSettings(dir)
}

func (s *stack) writeSettings(dir string) error {
	return os.WriteFile(filepath.Join(dir, "settings.txt"), []byte(strings.Join(s.settings, "\n")+"\n"), 0o644)
}

// set runs (on) or freezes (off) the stack's switched containers; the others are left running.
func (s *stack) set(ctx context.Context, on bool) error {
	for name, id := range s.containers {
		run := on || (s.switched != nil && !slices.Contains(s.switched, name))
		if err := setPaused(ctx, id, !run); err != nil {
			return fmt.Errorf("%s: %w", name, err)
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

// remove takes the stack's project down through the engine: its containers (a tool container
// whose run was interrupted too), its network and its Prometheus volume. Frozen containers are
// thawed first, so that they stop on their signal as compose expects.
func (s *stack) remove() {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	for _, id := range s.containers {
		_ = setPaused(ctx, id, false)
	}
	if err := s.eng.Down(ctx); err != nil {
		fmt.Fprintln(os.Stderr, "bench-observability: compose down:", err)
	}
	// Whatever down could not take (an interrupted tool's container), by the project's label.
	_ = s.eng.ForceRemove(ctx)
	if err := removeVolumes(ctx, s.client.ProjectName()); err != nil {
		fmt.Fprintln(os.Stderr, "bench-observability: remove volumes:", err)
	}
}

// keepHint is how to remove a stack left running with --keep.
func (s *stack) keepHint() string {
	return strings.Join(s.client.CommandLine("down", "--volumes"), " ")
}

// doubled is twice a duration given as a string (cAdvisor's max housekeeping interval).
func doubled(d string) string {
	v, err := time.ParseDuration(d)
	if err != nil {
		return d
	}
	return (2 * v).String()
}
