package runner

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/protobench/protobench/internal/engine"
	"github.com/protobench/protobench/internal/record"
	"github.com/protobench/protobench/internal/results"
	"github.com/protobench/protobench/internal/scenario"
	"github.com/protobench/protobench/internal/targets"
	"github.com/protobench/protobench/internal/tool"
)

// mergeMeasured copies the fields a tool measures onto the record the runner set up.
func mergeMeasured(rec *record.Record, m record.Record) {
	rec.DurationS = m.DurationS
	rec.Requests = m.Requests
	rec.Errors = m.Errors
	rec.Incomplete, rec.Unsent = m.Incomplete, m.Unsent
	rec.ThroughputRPS = m.ThroughputRPS
	rec.LatencyMs = m.LatencyMs
	rec.ServiceTimeMs = m.ServiceTimeMs
	rec.LatencyCount = m.LatencyCount
	rec.ClientParts = m.ClientParts
	rec.ClientCompressedReplies = m.ClientCompressedReplies
	rec.WarmupRequests, rec.WarmupErrors = m.WarmupRequests, m.WarmupErrors
	rec.Notes = append(rec.Notes, m.Notes...)
	for _, f := range m.Flags {
		rec.AddFlag(f)
	}
	if m.Error != "" {
		rec.Error = m.Error
	}
}

// serverEnvironment is the compose interpolation environment for a run's server: caps, cpuset
// and the scenario's knobs.
func serverEnvironment(r scenario.Run) map[string]string {
	env := map[string]string{
		"PROTOBENCH_SERVER_CPUS":   formatCPUs(r.Caps.ServerCPUs),
		"PROTOBENCH_SERVER_CPUSET": r.Layout.ServerCPUSet,
		"PROTOBENCH_SERVER_MEM":    fmt.Sprintf("%d", r.Caps.ServerMemoryBytes),
	}
	for k, v := range r.Env {
		env[k] = v
	}
	if r.Custom == nil && r.Compression != "" {
		// Every reference server reads it: none turns its compression off whatever a client
		// advertises, gzip on.
		env[targets.CompressionEnv] = r.Compression
	}
	if r.TLS {
		// The target's registry entry says how it serves TLS; the certificates are the run's,
		// mounted read-only at targets.TLSMount (prepareTLS).
		t, _ := targets.Lookup(r.Target)
		for k, v := range t.TLSEnv(targets.TLSMount) {
			env[k] = v
		}
	}
	return env
}

// clientEnvironment is the compose interpolation environment for a run's load tool.
func clientEnvironment(r scenario.Run) map[string]string {
	return map[string]string{
		"PROTOBENCH_CLIENT_CPUS":   formatCPUs(r.Caps.ClientCPUs),
		"PROTOBENCH_CLIENT_CPUSET": r.Layout.ClientCPUSet,
		"PROTOBENCH_CLIENT_MEM":    fmt.Sprintf("%d", r.Caps.ClientMemoryBytes),
		// The soft heap limit of a Go tool that collects garbage less often (k6).
		"PROTOBENCH_CLIENT_GOMEMLIMIT": fmt.Sprintf("%d", tool.GoMemLimit(r.Caps.ClientMemoryBytes)),
	}
}

func formatCPUs(c float64) string {
	return strings.TrimRight(strings.TrimRight(fmt.Sprintf("%.3f", c), "0"), ".")
}

// oneOff describes the tool container for one invocation.
func (s *stepRunner) oneOff(a tool.Adapter, env map[string]string, inv tool.Invocation) engine.OneOff {
	o := engine.OneOff{Service: a.Service(), Name: containerName(s.project, a), Env: withEnv(env, s.labels), Args: a.Args(inv)}
	c := a.Capabilities()
	o.Entrypoint, o.LiveMetrics = c.Program, c.LiveMetrics
	for name := range a.InputFiles(inv) {
		o.Inputs = append(o.Inputs, filepath.Base(name))
	}
	sort.Strings(o.Inputs)
	o.Parts = splitter(a, inv)
	return o
}

// writeInputs puts the files a tool reads (large request bodies) into raw/ before it runs, so
// they are kept with the output they produced.
func (s *stepRunner) writeInputs(a tool.Adapter, inv tool.Invocation) error {
	for name, data := range a.InputFiles(inv) {
		if err := results.WriteFileAtomic(filepath.Join(s.resultDir, "raw", filepath.Base(name)), data); err != nil {
			return fmt.Errorf("write %s input %s: %w", a.Name(), name, err)
		}
	}
	return nil
}

// containerName is the fixed name of a tool's one-off container, <project>-<service>: unique per
// compose project, so the leftover a crashed run of ours may leave (removed before each run) is
// never another stack's. Prometheus finds the default project's load generator by this name
// (protobench-loadgen) for its live metrics.
func containerName(project string, a tool.Adapter) string {
	if project == "" {
		project = "protobench"
	}
	return project + "-" + a.Service()
}

// saveRaw writes a tool's stdout and stderr untouched and returns their paths under the results
// folder.
func (s *stepRunner) saveRaw(prefix, toolName string, stdout, stderr []byte) []string {
	var names []string
	for suffix, data := range map[string][]byte{"stdout": stdout, "stderr": stderr} {
		name := filepath.Join("raw", fmt.Sprintf("%s.%s.%s", prefix, toolName, suffix))
		if err := results.WriteFileAtomic(filepath.Join(s.resultDir, name), data); err != nil {
			s.log("warning: keeping raw output: %v", err)
			continue
		}
		names = append(names, name)
	}
	sort.Strings(names)
	return names
}

// collectFiles reads the files a tool wrote under raw/ for this run.
func (s *stepRunner) collectFiles(prefix string) (map[string][]byte, []string) {
	matches, _ := filepath.Glob(filepath.Join(s.resultDir, "raw", prefix+"*"))
	files := map[string][]byte{}
	var names []string
	for _, m := range matches {
		base := filepath.Base(m)
		if strings.HasSuffix(base, ".stdout") || strings.HasSuffix(base, ".stderr") || strings.Contains(base, ".warmup") {
			continue
		}
		b, err := os.ReadFile(m)
		if err != nil {
			continue
		}
		files[base] = b
		names = append(names, filepath.Join("raw", base))
	}
	sort.Strings(names)
	return files, names
}

// stderrLine is what a tool said last, for a record's Error: one trimmed line, capped so that a
// tool dumping a long line cannot swamp the message, and never empty.
func stderrLine(stderr []byte) string {
	l := strings.TrimSpace(tool.LastLine(stderr))
	if len(l) > 200 {
		l = l[:200] + "…"
	}
	if l == "" {
		return "no output"
	}
	return l
}

// withEnv is env plus extra in a new map; env's own entries win.
func withEnv(env, extra map[string]string) map[string]string {
	out := make(map[string]string, len(env)+len(extra))
	for k, v := range extra {
		out[k] = v
	}
	for k, v := range env {
		out[k] = v
	}
	return out
}
