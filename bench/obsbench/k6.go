package obsbench

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/protobench/protobench/internal/tool"
	"github.com/protobench/protobench/internal/tool/k6"
)

// k6Run is the step measured by k6 instead of protobench's generator: compose's k6 service (its
// image, collector settings and a run's memory cap) on the client core, with the k6 adapter's
// own command line. With the stack on (promURL set), k6 also pushes its metrics to Prometheus by
// remote write, as in a run; with it off, k6 runs without that output, so the difference includes
// what remote write costs k6. It writes the adapter's input files (the remote-write config) to
// the raw folder.
func k6Run(o options, target, promURL, prefix, name string) (toolRun, tool.Invocation, error) {
	inv := tool.Invocation{
		Target: "grpc", Address: target, Scheme: "grpc", Method: "GetUser", Model: "closed",
		Connections: o.connections, Concurrency: o.concurrency, Duration: o.duration,
		RawDir: "/raw", RawPrefix: prefix,
		Labels:        map[string]string{"run_id": "bench-observability", "step": prefix},
		PrometheusURL: promURL,
	}
	a := k6.Adapter{}
	if err := a.Check(inv); err != nil {
		return toolRun{}, inv, err
	}
	for name, data := range a.InputFiles(inv) {
		if o.k6PushInterval != "" {
			var err error
			if data, err = withPushInterval(data, o.k6PushInterval); err != nil {
				return toolRun{}, inv, fmt.Errorf("%s: %w", name, err)
			}
		}
		if err := os.WriteFile(filepath.Join(o.outDir, filepath.Base(name)), data, 0o644); err != nil {
			return toolRun{}, inv, err
		}
	}
	env := stepLabels(name, "k6")
	if promURL != "" {
		// compose's k6 service names the receiver by its variable, which wins over the config
		// file's URL; here Prometheus is on the host network.
		env["PROTOBENCH_K6_REMOTE_WRITE_URL"] = strings.TrimSuffix(promURL, "/") + "/api/v1/write"
	}
	return toolRun{service: a.Service(), name: name, entrypoint: a.Capabilities().Program, env: env, args: a.Args(inv),
		limit: toolLimit(o, o.duration)}, inv, nil
}

// withPushInterval is k6's remote-write config with another push interval (--k6-push-interval):
// the config file is where compose's k6 service leaves it to be set.
func withPushInterval(config []byte, interval string) ([]byte, error) {
	var c map[string]map[string]map[string]any
	if err := json.Unmarshal(config, &c); err != nil {
		return nil, err
	}
	rw, ok := c["collectors"]["experimental-prometheus-rw"]
	if !ok {
		return nil, fmt.Errorf("no experimental-prometheus-rw collector")
	}
	rw["pushInterval"] = interval
	b, err := json.MarshalIndent(c, "", "  ")
	return append(b, '\n'), err
}

// runK6 runs k6 (k6Run) and reads its summary with the adapter. k6's log (its output's warnings
// among it: a push slower than its interval) is kept beside its summary.
func runK6(ctx context.Context, st *stack, t toolRun, inv tool.Invocation, outDir string) (trial, error) {
	stdout, log, runErr := st.run(ctx, t)
	if err := os.WriteFile(filepath.Join(outDir, inv.RawPrefix+".stderr"), log, 0o644); err != nil {
		return trial{}, err
	}
	files := map[string][]byte{}
	matches, _ := filepath.Glob(filepath.Join(outDir, inv.RawPrefix+"*"))
	for _, m := range matches {
		if b, err := os.ReadFile(m); err == nil {
			files[filepath.Base(m)] = b
		}
	}
	rec, err := k6.Adapter{}.Parse(inv, tool.Raw{Stdout: stdout, Files: files})
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
