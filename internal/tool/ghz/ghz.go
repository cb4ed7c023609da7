// Package ghz runs ghz (github.com/bojand/ghz, pinned v0.120.0) as a cross-check on the gRPC
// servers (targets grpc and python-grpc) and reads its JSON report (-O json).
//
// How a step maps onto ghz:
//
//   - Closed model: -c connections×concurrency workers over --connections connections for
//     -z duration. Each worker waits for its call to finish before the next: back to back.
//   - Open model: --rps rate --async. --rps is a total rate, not a per-worker one. Without --async,
//     ghz is a closed loop with a rate cap (a worker waits for its call, so a slow server quietly
//     lowers the rate: coordinated omission); with --async every tick starts its call at once,
//     which makes the schedule independent of the latency. ghz stamps a call when it starts it,
//     so its latency is the intended-time latency only while ghz keeps up with its pacer; when it
//     does not, the achieved rate drops below the target and the runner flags rate-not-met.
//   - --count-errors: failed calls are part of the latency statistics, as they are for wrk (every
//     response) and k6 (every request), and as ghz's own "average" always is. Without it ghz's
//     mean would cover every call but its percentiles only the successful ones.
//   - --duration-stop ignore: calls still in flight when -z expires are dropped, not reported as
//     Canceled errors of a healthy server.
//   - ghz computes its percentiles and fastest/slowest from its per-call details, which it caps at
//     the first 1,000,000 calls: on longer, faster steps the latency covers the start of the
//     window only (requests, errors and rps still count every call). Its JSON holds about 200
//     bytes per call for those details.
//
// Parse reads the report: nanoseconds become milliseconds, p50/p90/p99 come from
// latencyDistribution, max from slowest, and p99.9 (which ghz does not report) is computed from the
// per-call details with ghz's own rank rule.
package ghz

import (
	"encoding/base64"
	"encoding/json"
	"errors"
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

// Paths inside the tools image (images/ copies proto/ to ProtoDir).
const (
	// ProtoDir is the proto import path; ProtoFile is relative to it.
	ProtoDir  = "/usr/share/protobench/proto"
	ProtoFile = "protobench/v1/bench.proto"
	// Service is the fully qualified gRPC service.
	Service = "protobench.v1.Bench"
)

// MaxInlineDataBytes is the largest -d argument Args puts on the command line. Linux refuses a
// single argument above 128 KiB (MAX_ARG_STRLEN); larger call data goes to a -D file that
// InputFiles returns.
const MaxInlineDataBytes = 64 << 10

// defaultMessageLimit is grpc-go's 4 MiB message limit, which larger Echo payloads must raise.
const defaultMessageLimit = 4 << 20

// Adapter is the ghz adapter.
type Adapter struct{}

func init() { tool.Register(Adapter{}) }

// Name is "ghz".
func (Adapter) Name() string { return "ghz" }

// Service is the compose service ghz runs in.
func (Adapter) Service() string { return "ghz" }

// OwnWarmup is false: ghz's --skipFirst skips a count of calls, not a time, so the runner runs a
// separate warm-up invocation.
func (Adapter) OwnWarmup() bool { return false }

// unary lists the methods ghz drives; EchoStream's semantics (messages per stream) differ between
// tools, so it is left to the protobench generator.
var unary = []string{contract.MethodGetUser, contract.MethodEcho, contract.MethodMultiply, contract.MethodDivide}

// Capabilities: gRPC unary calls, closed or open.
func (Adapter) Capabilities() tool.Capabilities {
	return tool.Capabilities{
		Protocols: []string{targets.GRPC}, Methods: unary, Models: []string{"closed", "open"},
		Image: "ghz", Limits: "ghz speaks gRPC only, unary methods", Requests: true, TLS: true,
		ClientBound: true, Program: "ghz",
		// --enable-compression: gzip requests (grpc.UseCompressor). ghz links grpc-go's gzip
		// codec, so it advertises gzip on every call, even without the flag.
		Gzip: []string{targets.GRPC},
	}
}

// Check rejects invocations ghz cannot run faithfully.
func (Adapter) Check(inv tool.Invocation) error {
	switch {
	case inv.Scheme != targets.GRPC:
		return fmt.Errorf("ghz speaks gRPC only; target %q uses %q (use the protobench generator, wrk or k6)", inv.Target, inv.Scheme)
	case inv.Request != nil && (inv.Request.ProtoFile == "" || inv.Request.Call == ""):
		return fmt.Errorf("ghz: a custom request needs a proto file and a call")
	case inv.Request == nil && !slices.Contains(unary, inv.Method):
		return fmt.Errorf("ghz: method %q not supported; want one of %s", inv.Method, strings.Join(unary, ", "))
	case inv.Pattern != "":
		return fmt.Errorf("ghz: pattern %q not supported (gRPC has no patterns)", inv.Pattern)
	case inv.Connections < 1 || inv.Concurrency < 1:
		return fmt.Errorf("ghz: connections (%d) and concurrency (%d) must be at least 1", inv.Connections, inv.Concurrency)
	case inv.Duration <= 0:
		return fmt.Errorf("ghz: duration %s must be positive", inv.Duration)
	case inv.PayloadBytes < 0:
		return fmt.Errorf("ghz: payload_bytes %d must not be negative", inv.PayloadBytes)
	}
	switch inv.Model {
	case "closed":
		return nil
	case "open":
		// --rps is a whole number of calls per second, and 0 would mean "no limit".
		if !(inv.RatePerSec >= 1) || math.IsInf(inv.RatePerSec, 0) {
			return fmt.Errorf("ghz: the open model needs a rate of at least 1/s (--rps is an integer), got %v", inv.RatePerSec)
		}
		return nil
	default:
		return fmt.Errorf("ghz: model %q, want closed or open", inv.Model)
	}
}

// callData is the JSON request message for the method.
func callData(inv tool.Invocation) []byte {
	var msg any
	switch inv.Method {
	case contract.MethodGetUser:
		msg = map[string]int64{"id": contract.RequestUserID}
	case contract.MethodEcho:
		// protobuf's JSON mapping carries bytes as base64.
		msg = map[string]string{"payload": base64.StdEncoding.EncodeToString(contract.Payload(inv.PayloadBytes))}
	default:
		msg = map[string]int64{"a": contract.RequestA, "b": contract.RequestB}
	}
	b, err := json.Marshal(msg)
	if err != nil {
		panic(err) // maps of strings and ints always marshal
	}
	return b
}

// dataFileName is the -D file's base name under RawDir.
func dataFileName(inv tool.Invocation) string { return inv.RawPrefix + "-data.json" }

// InputFiles returns the files (base name under RawDir → content) that must exist before ghz runs:
// the call data when it is too long for the command line, otherwise nothing.
func (Adapter) InputFiles(inv tool.Invocation) map[string][]byte {
	if inv.Request != nil {
		return nil
	}
	data := callData(inv)
	if len(data) <= MaxInlineDataBytes {
		return nil
	}
	return map[string][]byte{dataFileName(inv): data}
}

// Args is ghz's command line for the invocation.
func (Adapter) Args(inv tool.Invocation) []string {
	workers := inv.Connections * inv.Concurrency
	// TLS: trust the run's CA and verify the name the server certificate holds; cleartext
	// otherwise (ghz defaults to TLS with the system's roots).
	security := []string{"--insecure"}
	if inv.CAFile != "" {
		security = []string{"--cacert", inv.CAFile, "--cname", inv.ServerName}
	}
	args := append(security,
		// The call data is fixed, so ghz need not render it as a template for every call: that
		// rendering is ghz's own cost, not the server's, and a cross-check should get ghz's best.
		"--disable-template-data",
	)
	if inv.Compression == targets.CompressionGzip {
		args = append(args, "--enable-compression")
	}
	if r := inv.Request; r != nil {
		// A custom target's own proto, method and request, which ghz takes natively.
		args = append(args, "--import-paths", path.Dir(r.ProtoFile), "--proto", path.Base(r.ProtoFile),
			"--call", r.Call, "-d", r.Data)
	} else {
		args = append(args, "--import-paths", ProtoDir, "--proto", ProtoFile, "--call", Service+"."+inv.Method)
		if data := callData(inv); len(data) <= MaxInlineDataBytes {
			args = append(args, "-d", string(data))
		} else {
			args = append(args, "-D", path.Join(inv.RawDir, dataFileName(inv)))
		}
	}
	args = append(args,
		"--connections", strconv.Itoa(inv.Connections),
		"-c", strconv.Itoa(workers),
		"-z", inv.Duration.String(),
	)
	if inv.Model == "open" {
		args = append(args, "--rps", strconv.FormatUint(uint64(math.Round(inv.RatePerSec)), 10), "--async")
	}
	if limit := inv.PayloadBytes + 64<<10; limit > defaultMessageLimit {
		args = append(args,
			"--max-send-message-size", strconv.Itoa(limit),
			"--max-recv-message-size", strconv.Itoa(limit))
	}
	args = append(args,
		"--count-errors",
		"--duration-stop", "ignore",
		"-O", "json",
		inv.Address,
	)
	return args
}

// report is the part of ghz's JSON report Parse reads. Durations are nanoseconds.
type report struct {
	EndReason string `json:"endReason"`
	Options   struct {
		CountErrors bool `json:"count-errors"`
	} `json:"options"`
	Count                  *int64         `json:"count"`
	Total                  int64          `json:"total"`
	Average                int64          `json:"average"`
	Fastest                int64          `json:"fastest"`
	Slowest                int64          `json:"slowest"`
	RPS                    float64        `json:"rps"`
	ErrorDistribution      map[string]int `json:"errorDistribution"`
	StatusCodeDistribution map[string]int `json:"statusCodeDistribution"`
	LatencyDistribution    []struct {
		Percentage int   `json:"percentage"`
		Latency    int64 `json:"latency"`
	} `json:"latencyDistribution"`
	Details []struct {
		Latency int64  `json:"latency"`
		Error   string `json:"error"`
	} `json:"details"`
}

// nsToMs converts ghz's nanoseconds to the record's milliseconds.
func nsToMs(ns int64) float64 { return float64(ns) / 1e6 }

// Parse reads ghz's JSON report from stdout.
func (a Adapter) Parse(inv tool.Invocation, raw tool.Raw) (record.Record, error) {
	rec := tool.NewRecord(a.Name(), inv)
	var r report
	if err := json.Unmarshal(raw.Stdout, &r); err != nil {
		return rec, fmt.Errorf("ghz: stdout is not ghz's JSON report (%v)%s", err, raw.StderrTail("ghz"))
	}
	if r.Count == nil {
		return rec, fmt.Errorf("ghz: JSON report has no count field%s", raw.StderrTail("ghz"))
	}
	if *r.Count < 0 || r.Total < 0 || r.Average < 0 || r.Slowest < 0 || math.IsNaN(r.RPS) || math.IsInf(r.RPS, 0) || r.RPS < 0 {
		return rec, errors.New("ghz: JSON report has negative or non-finite totals")
	}
	rec.Requests = *r.Count
	rec.DurationS = float64(r.Total) / 1e9
	rec.ThroughputRPS = r.RPS

	// A failed call lands in statusCodeDistribution under its code and in errorDistribution
	// under its message: the two are the same calls, so they are compared, not added.
	var nonOK, byMessage int64
	for code, n := range r.StatusCodeDistribution {
		if code != "OK" {
			nonOK += int64(n)
		}
	}
	for _, n := range r.ErrorDistribution {
		byMessage += int64(n)
	}
	rec.Errors = max(nonOK, byMessage)
	if rec.Errors > rec.Requests {
		return rec, fmt.Errorf("ghz: report counts %d errors in %d calls", rec.Errors, rec.Requests)
	}
	// ghz's rps counts failed calls too; the record's throughput is of successful ones.
	if rec.Errors > 0 && r.RPS > 0 {
		rec.ThroughputRPS = r.RPS * float64(rec.Requests-rec.Errors) / float64(rec.Requests)
	}
	if rec.Requests > 0 && rec.Errors == rec.Requests {
		rec.Error = fmt.Sprintf("all %d calls failed; most often: %s", rec.Requests, mostCommon(r.ErrorDistribution))
	}

	rec.LatencyMs.Mean = nsToMs(r.Average)
	rec.LatencyMs.Max = nsToMs(r.Slowest)
	for _, d := range r.LatencyDistribution {
		switch d.Percentage {
		case 50:
			rec.LatencyMs.P50 = nsToMs(d.Latency)
		case 90:
			rec.LatencyMs.P90 = nsToMs(d.Latency)
		case 99:
			rec.LatencyMs.P99 = nsToMs(d.Latency)
		}
	}
	var lats []int64
	for _, d := range r.Details {
		if d.Error == "" || r.Options.CountErrors {
			lats = append(lats, d.Latency)
		}
	}
	if len(lats) > 0 {
		sort.Slice(lats, func(i, j int) bool { return lats[i] < lats[j] })
		rec.LatencyMs.P999 = nsToMs(lats[rank(99.9, len(lats))])
	}
	return rec, nil
}

// rank is the index ghz's latencies() picks for percentile p of n sorted values (nearest rank,
// zero-based), reproduced so that p99.9 is computed the way ghz computes its other percentiles.
func rank(p float64, n int) int {
	ip := p / 100 * float64(n)
	di := int(ip)
	if ip == float64(di) {
		di--
	}
	return min(max(di, 0), n-1)
}

// mostCommon is the error message with the highest count (ties: the smallest message, for a
// stable result).
func mostCommon(dist map[string]int) string {
	best, bestN := "", -1
	for msg, n := range dist {
		if n > bestN || (n == bestN && msg < best) {
			best, bestN = msg, n
		}
	}
	return best
}
