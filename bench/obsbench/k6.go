package obsbench

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/protobench/protobench/internal/tool"
	"github.com/protobench/protobench/internal/tool/k6"
)

// toolMemory is k6's memory cap, a run's default (compose's PROTOBENCH_CLIENT_MEM).
const toolMemory = 1 << 30

// runK6 runs the step with k6 instead of protobench's generator: k6's image on the host network,
// pinned to the client core, with the k6 adapter's own command line. With the stack on, k6 also
// pushes its metrics to Prometheus by remote write, as in a run; with it off, k6 runs
// without that output, so the difference includes what remote write costs k6.
func runK6(ctx context.Context, o options, image, target, promURL, prefix, cidfile string) (trial, error) {
	inv := tool.Invocation{
		Target: "grpc", Address: target, Scheme: "grpc", Method: "GetUser", Model: "closed",
		Connections: o.connections, Concurrency: o.concurrency, Duration: o.duration,
		RawDir: "/raw", RawPrefix: prefix,
		Labels:        map[string]string{"run_id": "bench-observability", "step": prefix},
		PrometheusURL: promURL,
	}
	a := k6.Adapter{}
	if err := a.Check(inv); err != nil {
		return trial{}, err
	}
	for name, data := range a.InputFiles(inv) {
		if err := os.WriteFile(filepath.Join(o.outDir, filepath.Base(name)), data, 0o644); err != nil {
			return trial{}, err
		}
	}
	absOut, err := filepath.Abs(o.outDir)
	if err != nil {
		return trial{}, err
	}
	args := []string{"run", "--rm", "--network", "host", "--cpuset-cpus", strconv.Itoa(o.clientCore), "--cpus", "1", "--label", o.label,
		"--cidfile", cidfile, "--user", fmt.Sprintf("%d:%d", os.Getuid(), os.Getgid()), "-v", absOut + ":/raw", "--memory", strconv.FormatInt(toolMemory, 10)}
	for _, e := range k6.RuntimeEnv(toolMemory) {
		args = append(args, "-e", e)
	}
	if o.k6PushInterval != "" && promURL != "" {
		args = append(args, "-e", k6.PushIntervalEnv+"="+o.k6PushInterval)
	}
	args = append(args, "--entrypoint", a.Capabilities().Program, image)
	args = append(args, a.Args(inv)...)
	// k6's log (its output's warnings among it: a push slower than its interval) is kept beside
	// its summary.
	stdout, log, runErr := dockerLog(ctx, args...)
	if err := os.WriteFile(filepath.Join(o.outDir, prefix+".stderr"), []byte(log), 0o644); err != nil {
		return trial{}, err
	}
	files := map[string][]byte{}
	matches, _ := filepath.Glob(filepath.Join(o.outDir, prefix+"*"))
	for _, m := range matches {
		if b, err := os.ReadFile(m); err == nil {
			files[filepath.Base(m)] = b
		}
	}
	rec, err := a.Parse(inv, tool.Raw{Stdout: []byte(stdout), Files: files})
	if err != nil {
		if runErr != nil {
			return trial{}, fmt.Errorf("k6: %v; %v", runErr, err)
		}
		return trial{}, err
	}
	if rec.Error != "" || rec.ThroughputRPS <= 0 {
		return trial{}, fmt.Errorf("k6 measured nothing: %s", strings.TrimSpace(rec.Error))
	}
	return trial{RPS: rec.ThroughputRPS, P99Ms: rec.LatencyMs.P99, Requests: rec.Requests, Errors: rec.Errors, Seconds: rec.DurationS}, nil
}
