// Package k6 runs Grafana k6 (go.k6.io/k6, pinned v1.8.1) as a cross-check on the REST and gRPC
// servers, with the scripts in scripts/ (http.js, grpc.js, and lib.js which both import), and reads
// its end-of-test summary export.
//
// How a step maps onto k6 (all settings go to the script as -e PROTOBENCH_*; see scripts/lib.js):
//
//   - Closed model: the constant-vus executor with connections×concurrency VUs, each sending its
//     next request when the previous one is answered.
//   - Open model: the constant-arrival-rate executor at the step's rate with connections×concurrency
//     pre-allocated VUs (and no more). When every VU is busy, k6 drops the iteration rather than
//     delaying it, so the achieved rate falls below the target and the runner flags rate-not-met.
//   - k6 gives every VU its own connection, for gRPC too: unlike ghz, VUs cannot share one.
//   - One request per iteration; the check "ok" (HTTP 200, gRPC OK) counts failures, including a
//     gRPC connection that cannot be made.
//   - k6's gRPC client runs at about half its HTTP rate: its numbers are a cross-check, never the
//     comparison between protocols.
//
// The command line is
//
//	k6 run --quiet --no-color --no-usage-report --address= \
//	  --summary-trend-stats avg,min,med,max,p(90),p(99),p(99.9) \
//	  --summary-export <RawDir>/<RawPrefix>-summary.json -e PROTOBENCH_...=... \
//	  /usr/share/protobench/k6/http.js
//
// (--address= turns off k6's REST API listener, which would collide between concurrent runs;
// --no-usage-report keeps it from phoning home.) p(99) and p(99.9) are not in k6's default
// summary, hence --summary-trend-stats. The export's trends are in milliseconds.
//
// Live metrics: when the invocation names a Prometheus, k6 also pushes its metrics there by
// remote write (-o experimental-prometheus-rw) five times a second, tagged (--tag) with the
// invocation's labels, its target and tool=k6 so that the dashboards can select one step. k6
// v1.8.1 ignores options given after the output's name, so they go in a config file
// (--config <RawDir>/<RawPrefix>-config.json, from InputFiles): the receiver's URL
// (Prometheus's /api/v1/write), the push interval, and trends sent as native histograms
// (k6_http_req_duration_seconds and the like; Prometheus needs --enable-feature=native-histograms,
// which compose sets). The label "scenario" is not passed: k6 sets that tag to its own scenario's
// name on every sample, whatever --tag says.
//
// Why native histograms: k6's other way to push a trend is gauges of statistics (p99 and the
// like) over the test so far, from a sink that keeps every value of the test and sorts them all
// again at each push, for each of the eight trends a request adds to. That work grows with the
// test's length, on the core k6 already fills: measured natively on 2 cores, 16 VUs on GetUser
// against servers/rest, pushing every second, k6 took 8.8 % more CPU per request at 10 s and 17 %
// more at 40 s than without the output (p99 alone, 18 %: the sort is the cost, not the number of
// statistics); with native histograms, 7 % at 40 s. A histogram also gives the dashboard a p99
// over its own window rather than since the start.
package k6

import (
	"embed"
	"encoding/json"
	"fmt"
	"math"
	"path"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/protobench/protobench/internal/contract"
	"github.com/protobench/protobench/internal/record"
	"github.com/protobench/protobench/internal/targets"
	"github.com/protobench/protobench/internal/tool"
)

// Scripts holds scripts/*.js; the tools image installs them in ScriptDir (from ScriptSource in the
// repository).
//
//go:embed scripts/*.js
var Scripts embed.FS

const (
	// ScriptDir is where the tools image installs the scripts.
	ScriptDir = "/usr/share/protobench/k6"
	// ScriptSource is the scripts' directory in the repository, for image builds.
	ScriptSource = "internal/tool/k6/scripts"
	// ProtoDir is the proto import path grpc.js loads protobench/v1/bench.proto from.
	ProtoDir = "/usr/share/protobench/proto"
)

// GOGC is the Go collector's setting k6 runs with: it collects when the heap has grown by 400 %
// of what the last collection kept, not Go's default 100 %. k6 allocates for every sample of
// every request, and its remote-write output allocates more for the samples it holds between
// pushes; at Go's default the collections those allocations start were what the output cost k6.
// Measured natively (k6 on core 1, 16 VUs on GetUser against servers/grpc on core 0, a
// Prometheus receiving the 200 ms push on core 0, 10 s runs, 5 interleaved rounds; 2026-11-25):
// CPU per request 51 us without the output and 53 with it at GOGC=100 (-5 % to +12 % a round);
// 44 and 43 at GOGC=400 (-2.5 % to +0.2 %), with k6 about 14 % cheaper per request either way. Its peak
// RSS rose from 65 to 109 MB at 16 VUs and from 150 to 320 MB at 200, and GOMEMLIMIT
// (tool.GoMemLimit) pulls collections back in before the container's cap.
const GOGC = "400"

// GODEBUG turns off net/http's HTTP/2 client in k6: over https:// k6 would otherwise take h2
// whenever the server's ALPN offers it (the REST server offers h2 and http/1.1), and a step that
// says HTTP/1.1 would measure HTTP/2. k6's gRPC client has an HTTP/2 of its own (grpc-go), which
// this leaves alone.
const GODEBUG = "http2client=0"

// RuntimeEnv is the environment (KEY=VALUE) of a k6 process in a container capped at capBytes:
// GOGC, its soft memory limit and GODEBUG. compose's k6 service sets the same for runs.
func RuntimeEnv(capBytes int64) []string {
	return []string{"GOGC=" + GOGC, "GOMEMLIMIT=" + strconv.FormatInt(tool.GoMemLimit(capBytes), 10), "GODEBUG=" + GODEBUG}
}

// TrendStats are the statistics k6 is asked to export for every trend.
const TrendStats = "avg,min,med,max,p(90),p(99),p(99.9)"

// Adapter is the k6 adapter.
type Adapter struct{}

func init() { tool.Register(Adapter{}) }

// Name is "k6".
func (Adapter) Name() string { return "k6" }

// Service is the compose service k6 runs in.
func (Adapter) Service() string { return "k6" }

// OwnWarmup is false: the runner runs a separate warm-up invocation.
func (Adapter) OwnWarmup() bool { return false }

// scripts maps the target's scheme to its script and the trend holding request durations.
var scripts = map[string]struct{ file, trend string }{
	targets.HTTP: {"http.js", "http_req_duration"},
	targets.GRPC: {"grpc.js", "grpc_req_duration"},
}

var unary = []string{contract.MethodGetUser, contract.MethodEcho, contract.MethodMultiply, contract.MethodDivide}

// Capabilities: REST over HTTP/1.1 with JSON bodies and gRPC, unary, closed or open.
func (Adapter) Capabilities() tool.Capabilities {
	return tool.Capabilities{
		LiveMetrics: tool.LiveRemoteWrite,
		Protocols:   []string{targets.HTTP, targets.GRPC}, Methods: unary, Models: []string{"closed", "open"},
		HTTP:  []tool.HTTPMode{{Version: targets.HTTP1, Encoding: targets.EncodingJSON}},
		Image: "k6", Limits: "k6's scripts speak HTTP/1.1 with JSON bodies and gRPC, unary methods",
		ClientBound: true, Program: "k6", Compose: composeService,
		// https:// and gRPC over TLS, trusting the run's CA (PROTOBENCH_TLS_CA in scripts/lib.js).
		TLS: true,
	}
}

// composeService is the k6 service's own part of compose/docker-compose.yml: remote write to
// Prometheus, the collector's settings, and the mounts the upstream image lacks.
const composeService = `    environment:
      K6_PROMETHEUS_RW_SERVER_URL: ${PROTOBENCH_K6_REMOTE_WRITE_URL:-http://prometheus:9090/api/v1/write}
      # As the runner's config file says too, for a k6 run by hand with -o experimental-prometheus-rw:
      # trends as native histograms (internal/tool/k6 says why), which the dashboards read.
      K6_PROMETHEUS_RW_TREND_AS_NATIVE_HISTOGRAM: "true"
      # Go's collector runs less often in k6 (internal/tool/k6 GOGC says why, with figures), and
      # again more often near the tool's memory cap (80 % of it; the runner sets the variable).
      GOGC: "400"
      GOMEMLIMIT: "${PROTOBENCH_CLIENT_GOMEMLIMIT:-858993456}"
      # A TLS step's CA (Go's crypto/x509 reads SSL_CERT_FILE); empty on cleartext steps.
      SSL_CERT_FILE: "${PROTOBENCH_TLS_CA_FILE:-}"
      # HTTP/1.1 over https:// too, as k6's steps say (internal/tool/k6 GODEBUG says why).
      GODEBUG: "http2client=0"
    # The upstream grafana/k6 image has neither the contract nor protobench's scripts: mount
    # both (the local k6 image has copies at the same paths).
    volumes:
      - ${PROTOBENCH_RAW_DIR:-/tmp/protobench-raw}:/raw
      - ../proto:/usr/share/protobench/proto:ro
      - ../internal/tool/k6/scripts:/usr/share/protobench/k6:ro
      - ${PROTOBENCH_TLS_CA_DIR:-/tmp/protobench-tls-none}:/run/protobench/tls:ro
`

// Check rejects invocations k6 cannot run with protobench's scripts.
func (Adapter) Check(inv tool.Invocation) error {
	if _, ok := scripts[inv.Scheme]; !ok {
		return fmt.Errorf("k6: target %q speaks %q; the k6 scripts drive http (rest) and grpc (grpc, python-grpc)", inv.Target, inv.Scheme)
	}
	switch {
	case !slices.Contains(unary, inv.Method):
		return fmt.Errorf("k6: method %q not supported; want one of %s", inv.Method, strings.Join(unary, ", "))
	case inv.Pattern != "":
		return fmt.Errorf("k6: pattern %q not supported", inv.Pattern)
	case inv.Connections < 1 || inv.Concurrency < 1:
		return fmt.Errorf("k6: connections (%d) and concurrency (%d) must be at least 1", inv.Connections, inv.Concurrency)
	case inv.Duration <= 0:
		return fmt.Errorf("k6: duration %s must be positive", inv.Duration)
	case inv.PayloadBytes < 0:
		return fmt.Errorf("k6: payload_bytes %d must not be negative", inv.PayloadBytes)
	}
	if err := (Adapter{}).Capabilities().CheckHTTP("k6", inv); err != nil {
		return err
	}
	switch inv.Model {
	case "closed":
		return nil
	case "open":
		if !(inv.RatePerSec > 0) || math.IsInf(inv.RatePerSec, 0) {
			return fmt.Errorf("k6: the open model needs a rate above 0, got %v", inv.RatePerSec)
		}
		return nil
	default:
		return fmt.Errorf("k6: model %q, want closed or open", inv.Model)
	}
}

// RemoteWritePushInterval is how often k6 pushes. k6's output keeps every sample of every request
// until the next push and then reads them all at once on the Go thread k6's 1-cpu cap gives it,
// so the interval sets both its CPU and the stall the slowest requests wait behind. CPU per request
// over no output (natively, 16 VUs on GetUser against servers/rest, 20 s runs, 3 each): +21 %
// every 5 s, 7–12 % every 1 s, 1–3 % at 200, 100 or 50 ms. The stall, as p99 over no output
// (2026-11-26): natively against servers/grpc, 22 interleaved rounds, +10.1 % at 200 ms and +5.6 %
// at 50 ms (14 rounds at 20 ms: +4.6 %); in bench-observability's trials, +13.3 % at 200 ms and
// +4.3 % at 50 ms (16 pairs each). At 20 ms a push outlasts its interval and k6 warns that samples
// may be dropped, and p99 was no lower. Prometheus pays about 0.005 of a core more at 50 ms.
const RemoteWritePushInterval = "50ms"

// PushIntervalEnv overrides the config file's push interval in k6's remote-write output (its
// environment takes precedence over the JSON config).
const PushIntervalEnv = "K6_PROMETHEUS_RW_PUSH_INTERVAL"

// ConfigFile is the base name, under RawDir, of the k6 config file that sets up remote write.
func ConfigFile(inv tool.Invocation) string { return inv.RawPrefix + "-config.json" }

// InputFiles returns k6's config file when the invocation names a Prometheus to push to.
func (Adapter) InputFiles(inv tool.Invocation) map[string][]byte {
	if inv.PrometheusURL == "" {
		return nil
	}
	type remoteWrite struct {
		URL                    string `json:"url"`
		PushInterval           string `json:"pushInterval"`
		TrendAsNativeHistogram bool   `json:"trendAsNativeHistogram"`
	}
	b, err := json.MarshalIndent(map[string]any{"collectors": map[string]remoteWrite{
		"experimental-prometheus-rw": {
			URL:                    strings.TrimSuffix(inv.PrometheusURL, "/") + "/api/v1/write",
			PushInterval:           RemoteWritePushInterval,
			TrendAsNativeHistogram: true,
		},
	}}, "", "  ")
	if err != nil {
		panic(err) // strings only
	}
	return map[string][]byte{ConfigFile(inv): append(b, '\n')}
}

// tags are the --tag flags that label k6's live metrics like the rest of the step's series.
func tags(inv tool.Invocation) []string {
	labels := map[string]string{"target": inv.Target, "tool": "k6"}
	for k, v := range inv.Labels {
		if k != "scenario" {
			labels[k] = v
		}
	}
	keys := make([]string, 0, len(labels))
	for k := range labels {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var out []string
	for _, k := range keys {
		out = append(out, "--tag", k+"="+labels[k])
	}
	return out
}

// SummaryFile is the base name, under RawDir, of the summary k6 exports for the invocation.
func SummaryFile(inv tool.Invocation) string { return inv.RawPrefix + "-summary.json" }

// Args is k6's command line for the invocation.
func (Adapter) Args(inv tool.Invocation) []string {
	env := []string{
		"PROTOBENCH_ADDRESS=" + inv.Address,
		"PROTOBENCH_METHOD=" + inv.Method,
		"PROTOBENCH_PAYLOAD_BYTES=" + strconv.Itoa(inv.PayloadBytes),
		"PROTOBENCH_MODEL=" + inv.Model,
		"PROTOBENCH_VUS=" + strconv.Itoa(inv.Connections*inv.Concurrency),
	}
	if inv.Model == "open" {
		env = append(env, "PROTOBENCH_RATE="+strconv.FormatFloat(inv.RatePerSec, 'f', -1, 64))
	}
	env = append(env, "PROTOBENCH_DURATION="+strconv.FormatFloat(inv.Duration.Seconds(), 'f', -1, 64)+"s")
	if inv.Scheme == targets.GRPC {
		env = append(env, "PROTOBENCH_PROTO_DIR="+ProtoDir)
	}
	if inv.CAFile != "" {
		env = append(env, "PROTOBENCH_TLS_CA="+inv.CAFile)
	}
	args := []string{
		"run", "--quiet", "--no-color", "--no-usage-report", "--address=",
		"--summary-trend-stats", TrendStats,
		"--summary-export", path.Join(inv.RawDir, SummaryFile(inv)),
	}
	if inv.PrometheusURL != "" {
		args = append(args, "--config", path.Join(inv.RawDir, ConfigFile(inv)), "-o", "experimental-prometheus-rw")
		args = append(args, tags(inv)...)
	}
	for _, e := range env {
		args = append(args, "-e", e)
	}
	return append(args, path.Join(ScriptDir, scripts[inv.Scheme].file))
}

// summary is the part of k6's --summary-export JSON that Parse reads. Trends are milliseconds.
type summary struct {
	Metrics map[string]json.RawMessage `json:"metrics"`
}

type trend struct {
	Avg  *float64 `json:"avg"`
	Med  *float64 `json:"med"`
	Max  *float64 `json:"max"`
	P90  *float64 `json:"p(90)"`
	P99  *float64 `json:"p(99)"`
	P999 *float64 `json:"p(99.9)"`
}

type counter struct {
	Count float64 `json:"count"`
	Rate  float64 `json:"rate"`
}

type rate struct {
	Passes int64 `json:"passes"`
	Fails  int64 `json:"fails"`
}

// Parse reads k6's summary export (Raw.Files[SummaryFile(inv)]).
//
// Requests are completed iterations (one request each), errors the failed "ok" checks, throughput
// k6's iteration rate, and the duration count/rate (k6's test run time). Latency is the
// http_req_duration or grpc_req_duration trend, which covers failed requests too.
func (a Adapter) Parse(inv tool.Invocation, raw tool.Raw) (record.Record, error) {
	rec := tool.NewRecord(a.Name(), inv)
	name := SummaryFile(inv)
	data, ok := raw.Files[name]
	if !ok {
		return rec, fmt.Errorf("k6: no summary export %s among its output files%s", name, raw.StderrTail("k6"))
	}
	var s summary
	if err := json.Unmarshal(data, &s); err != nil {
		return rec, fmt.Errorf("k6: %s is not a k6 summary export: %v", name, err)
	}
	var iterations counter
	if m, ok := s.Metrics["iterations"]; ok {
		if err := json.Unmarshal(m, &iterations); err != nil {
			return rec, fmt.Errorf("k6: %s: iterations: %v", name, err)
		}
	}
	var checks rate
	if m, ok := s.Metrics["checks"]; ok {
		if err := json.Unmarshal(m, &checks); err != nil {
			return rec, fmt.Errorf("k6: %s: checks: %v", name, err)
		}
	}
	if !finite(iterations.Count, iterations.Rate) || iterations.Count < 0 || iterations.Rate < 0 || checks.Passes < 0 || checks.Fails < 0 {
		return rec, fmt.Errorf("k6: %s: negative or non-finite counts", name)
	}
	if iterations.Count != math.Trunc(iterations.Count) || iterations.Count > 1<<53 {
		return rec, fmt.Errorf("k6: %s: iteration count %v is not a whole number", name, iterations.Count)
	}
	rec.Requests = int64(iterations.Count)
	rec.Errors = checks.Fails
	if rec.Errors > rec.Requests {
		return rec, fmt.Errorf("k6: %s: %d failed checks in %d iterations", name, rec.Errors, rec.Requests)
	}
	if rec.Requests == 0 {
		rec.Error = "k6 completed no iteration" + raw.StderrTail("k6")
		return rec, nil
	}
	if iterations.Rate == 0 {
		return rec, fmt.Errorf("k6: %s: %d iterations at a rate of 0/s", name, rec.Requests)
	}
	rec.DurationS = iterations.Count / iterations.Rate
	// k6's iteration rate counts failed iterations too; the record's throughput is of successful ones.
	rec.ThroughputRPS = record.SuccessRPS(rec.Requests, rec.Errors, rec.DurationS)
	if rec.Errors == rec.Requests {
		rec.Error = fmt.Sprintf("all %d requests failed the ok check", rec.Requests)
	}

	trendName := scripts[inv.Scheme].trend
	m, ok := s.Metrics[trendName]
	if !ok {
		// No request got far enough to be timed (e.g. every gRPC connect failed).
		return rec, nil
	}
	var tr trend
	if err := json.Unmarshal(m, &tr); err != nil {
		return rec, fmt.Errorf("k6: %s: %s: %v", name, trendName, err)
	}
	for stat, v := range map[string]*float64{"avg": tr.Avg, "med": tr.Med, "max": tr.Max, "p(90)": tr.P90, "p(99)": tr.P99, "p(99.9)": tr.P999} {
		if v == nil {
			return rec, fmt.Errorf("k6: %s: %s has no %s (was k6 run with --summary-trend-stats %s?)", name, trendName, stat, TrendStats)
		}
		if !finite(*v) || *v < 0 {
			return rec, fmt.Errorf("k6: %s: %s %s = %v is not a duration", name, trendName, stat, *v)
		}
	}
	rec.LatencyMs = record.Latency{Mean: *tr.Avg, P50: *tr.Med, P90: *tr.P90, P99: *tr.P99, P999: *tr.P999, Max: *tr.Max}
	return rec, nil
}

func finite(vs ...float64) bool {
	for _, v := range vs {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return false
		}
	}
	return true
}
