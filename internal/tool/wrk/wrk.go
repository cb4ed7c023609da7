// Package wrk runs wrk (Debian's wrk 4.1, the tool seed 003 used) and wrk2 as cross-checks on the
// REST server, and reads the JSON line its Lua script prints.
//
// Two adapters register, both running in the compose service "wrk":
//
//   - "wrk" runs the closed model only: -c connections with one request in flight each, back to
//     back. wrk cannot pace requests, so Check rejects the open model.
//   - "wrk2" runs the open model only: -R is wrk2's total rate, and it is mandatory, so Check
//     rejects the closed model. wrk2 records latency from the intended send time (coordinated
//     omission corrected). It calibrates for its first 10 s, so steps shorter than about 20 s
//     mislead. wrk2's source is only on GitHub: the locally built tools image has only wrk, so
//     scenarios should use "wrk2" only where its image is available.
//
// The command line is
//
//	wrk -t T -c C -d Ns [-R rate] --timeout 20s --latency -s /usr/share/protobench/wrk/report.lua \
//	    http://host:port/v1/users/42 -- method=GetUser id=42
//
// where C = connections × concurrency (HTTP/1.1 has one request in flight per connection, so the
// step's total concurrency becomes connections) and T = min(C, 2): wrk needs C ≥ T, and two event
// loops are enough for the one or two cores the load tools get on the machines protobench targets
// while leaving headroom when they get more. --timeout is 20 s, ghz's default, so both tools call
// the same slow responses errors. The script (report.lua, embedded here as Script) sets the HTTP
// method, path and body for the contract method and prints one JSON line from its done() hook, so
// Parse reads machine output, not wrk's human report.
package wrk

import (
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/protobench/protobench/internal/contract"
	"github.com/protobench/protobench/internal/record"
	"github.com/protobench/protobench/internal/targets"
	"github.com/protobench/protobench/internal/tool"
)

// Script is report.lua, the wrk/wrk2 script. The tools image installs it at ScriptPath (from
// ScriptSource in the repository).
//
//go:embed report.lua
var Script []byte

const (
	// ScriptPath is where the tools image installs Script.
	ScriptPath = "/usr/share/protobench/wrk/report.lua"
	// ScriptSource is Script's path in the repository, for image builds.
	ScriptSource = "internal/tool/wrk/report.lua"
)

// maxThreads caps wrk's threads (see the package comment).
const maxThreads = 2

// requestTimeout is wrk's --timeout.
const requestTimeout = "20s"

// Adapter is the wrk adapter; Rate selects wrk2.
type Adapter struct {
	// Rate is true for wrk2, which paces requests with -R (open model only).
	Rate bool
}

func init() {
	tool.Register(Adapter{})
	tool.Register(Adapter{Rate: true})
}

// Name is "wrk" or "wrk2".
func (a Adapter) Name() string {
	if a.Rate {
		return "wrk2"
	}
	return "wrk"
}

// Service is the compose service both flavours run in.
func (Adapter) Service() string { return "wrk" }

// OwnWarmup is false: the runner runs a separate warm-up invocation.
func (Adapter) OwnWarmup() bool { return false }

// paths maps each contract method to the REST path wrk's URL shows (the script sets the real one).
var paths = map[string]string{
	contract.MethodGetUser:  "/v1/users/" + strconv.Itoa(contract.RequestUserID),
	contract.MethodEcho:     "/v1/echo",
	contract.MethodMultiply: "/v1/multiply",
	contract.MethodDivide:   "/v1/divide",
}

// Capabilities: REST over HTTP/1.1 with JSON bodies; wrk closed, wrk2 open, from one image
// that holds wrk2 only where wrk2 could be built.
func (a Adapter) Capabilities() tool.Capabilities {
	c := tool.Capabilities{
		TLS:       true,
		Protocols: []string{targets.HTTP},
		Methods:   []string{contract.MethodGetUser, contract.MethodEcho, contract.MethodMultiply, contract.MethodDivide},
		HTTP:      []tool.HTTPMode{{Version: targets.HTTP1, Encoding: targets.EncodingJSON}},
		Image:     "wrk",
		// wrk or wrk2, from the one service.
		Program: a.Name(),
		Compose: composeService,
	}
	if a.Rate {
		c.Models, c.ImageVariant = []string{"open"}, "wrk2"
		c.Limits = "wrk2 speaks HTTP/1.1 with JSON bodies only and always paces requests (-R)"
		return c
	}
	c.Models = []string{"closed"}
	c.Limits = "wrk speaks HTTP/1.1 with JSON bodies only and is closed-loop (Debian's wrk has no -R)"
	return c
}

// InputFiles is nil: wrk reads only the script in its image.
func (Adapter) InputFiles(tool.Invocation) map[string][]byte { return nil }

// composeService is the wrk service's own part of compose/docker-compose.yml: which flavour the
// image holds (the runner sets it from the image catalog).
const composeService = `    environment:
      # wrk2 where it could be built, Debian's wrk 4.1 otherwise (no -R).
      PROTOBENCH_WRK_FLAVOR: ${PROTOBENCH_WRK_FLAVOR:-wrk}
`

// Check rejects invocations this flavour cannot run.
func (a Adapter) Check(inv tool.Invocation) error {
	name := a.Name()
	switch {
	case inv.Scheme != targets.HTTP:
		return fmt.Errorf("%s speaks HTTP only; target %q uses %q (use ghz, k6 or the protobench generator)", name, inv.Target, inv.Scheme)
	case paths[inv.Method] == "":
		return fmt.Errorf("%s: method %q not served over REST; want GetUser, Echo, Multiply or Divide", name, inv.Method)
	case inv.Pattern != "":
		return fmt.Errorf("%s: pattern %q not supported", name, inv.Pattern)
	case inv.Connections < 1 || inv.Concurrency < 1:
		return fmt.Errorf("%s: connections (%d) and concurrency (%d) must be at least 1", name, inv.Connections, inv.Concurrency)
	case inv.Duration < time.Second || inv.Duration%time.Second != 0:
		return fmt.Errorf("%s: duration %s must be a whole number of seconds (wrk's -d)", name, inv.Duration)
	case inv.PayloadBytes < 0:
		return fmt.Errorf("%s: payload_bytes %d must not be negative", name, inv.PayloadBytes)
	}
	if err := a.Capabilities().CheckHTTP(name, inv); err != nil {
		return err
	}
	switch {
	case inv.Model != "closed" && inv.Model != "open":
		return fmt.Errorf("%s: model %q, want closed or open", name, inv.Model)
	case !a.Rate && inv.Model == "open":
		return errors.New("wrk cannot pace requests (Debian's wrk 4.1 has no -R): the open model needs tool wrk2 or the protobench generator")
	case a.Rate && inv.Model == "closed":
		return errors.New("wrk2 always paces requests (-R is mandatory): use tool wrk for the closed model")
	case a.Rate && (!(inv.RatePerSec >= 1) || math.IsInf(inv.RatePerSec, 0)):
		return fmt.Errorf("wrk2: the open model needs a rate of at least 1/s, got %v", inv.RatePerSec)
	}
	return nil
}

// Args is the wrk (or wrk2) command line for the invocation.
func (a Adapter) Args(inv tool.Invocation) []string {
	conns := inv.Connections * inv.Concurrency
	args := []string{
		"-t", strconv.Itoa(tool.Threads(conns, maxThreads)),
		"-c", strconv.Itoa(conns),
		"-d", strconv.Itoa(int(inv.Duration/time.Second)) + "s",
	}
	if a.Rate {
		args = append(args, "-R", strconv.FormatUint(uint64(math.Round(inv.RatePerSec)), 10))
	}
	args = append(args,
		"--timeout", requestTimeout,
		"--latency",
		"-s", ScriptPath,
		scheme(inv)+inv.Address+paths[inv.Method],
		"--", "method="+inv.Method,
	)
	switch inv.Method {
	case contract.MethodGetUser:
		args = append(args, "id="+strconv.Itoa(contract.RequestUserID))
	case contract.MethodEcho:
		args = append(args, "payload_bytes="+strconv.Itoa(inv.PayloadBytes))
	case contract.MethodMultiply, contract.MethodDivide:
		args = append(args, "a="+strconv.Itoa(contract.RequestA), "b="+strconv.Itoa(contract.RequestB))
	}
	return args
}

// linePrefix starts the JSON line report.lua prints.
const linePrefix = `{"protobench_wrk":`

// report is the JSON line report.lua prints. Times are microseconds.
type report struct {
	Version    *int  `json:"protobench_wrk"`
	DurationUs int64 `json:"duration_us"`
	Requests   int64 `json:"requests"`
	Bytes      int64 `json:"bytes"`
	Errors     struct {
		Connect int64 `json:"connect"`
		Read    int64 `json:"read"`
		Write   int64 `json:"write"`
		Status  int64 `json:"status"`
		Timeout int64 `json:"timeout"`
	} `json:"errors"`
	LatencyUs struct {
		Min  float64 `json:"min"`
		Mean float64 `json:"mean"`
		Max  float64 `json:"max"`
		P50  float64 `json:"p50"`
		P90  float64 `json:"p90"`
		P99  float64 `json:"p99"`
		P999 float64 `json:"p999"`
	} `json:"latency_us"`
}

// Parse reads the JSON line report.lua's done() printed on stdout.
//
// Requests are wrk's completed requests, which include responses with an error status. Errors
// add those (status ≥ 400) to socket errors (connect, read, write) and timeouts, which never
// completed. Throughput is completed requests per second, as wrk's own Requests/sec.
func (a Adapter) Parse(inv tool.Invocation, raw tool.Raw) (record.Record, error) {
	rec := tool.NewRecord(a.Name(), inv)
	var line string
	for _, l := range strings.Split(string(raw.Stdout), "\n") {
		if strings.HasPrefix(l, linePrefix) {
			line = l
		}
	}
	if line == "" {
		return rec, fmt.Errorf("%s: no protobench JSON line in its output (did it run with -s %s?)%s", a.Name(), ScriptPath, said(raw))
	}
	var r report
	if err := json.Unmarshal([]byte(line), &r); err != nil {
		return rec, fmt.Errorf("%s: unreadable JSON line from report.lua: %v", a.Name(), err)
	}
	e := r.Errors
	for _, v := range []int64{r.DurationUs, r.Requests, e.Connect, e.Read, e.Write, e.Status, e.Timeout} {
		if v < 0 {
			return rec, fmt.Errorf("%s: negative count in report.lua's line: %s", a.Name(), line)
		}
	}
	if r.DurationUs == 0 {
		return rec, fmt.Errorf("%s: report.lua says the run lasted 0 µs", a.Name())
	}
	if e.Status > r.Requests {
		return rec, fmt.Errorf("%s: %d error statuses in %d requests", a.Name(), e.Status, r.Requests)
	}
	rec.Requests = r.Requests
	rec.Errors = e.Connect + e.Read + e.Write + e.Status + e.Timeout
	rec.DurationS = float64(r.DurationUs) / 1e6
	// wrk's requests are the responses it read, error statuses among them (socket errors and
	// timeouts never became a response): the record's throughput is of the successful ones.
	rec.ThroughputRPS = record.SuccessRPS(r.Requests, e.Status, rec.DurationS)
	l := r.LatencyUs
	rec.LatencyMs = record.Latency{
		Mean: l.Mean / 1e3, P50: l.P50 / 1e3, P90: l.P90 / 1e3, P99: l.P99 / 1e3, P999: l.P999 / 1e3, Max: l.Max / 1e3,
	}
	for _, v := range []float64{l.Mean, l.P50, l.P90, l.P99, l.P999, l.Max} {
		if math.IsNaN(v) || math.IsInf(v, 0) || v < 0 {
			return rec, fmt.Errorf("%s: latency %v in report.lua's line is not a duration", a.Name(), v)
		}
	}
	if r.Requests == 0 && rec.Errors > 0 {
		rec.Error = fmt.Sprintf("no request completed: %d connect, %d read, %d write errors, %d timeouts",
			e.Connect, e.Read, e.Write, e.Timeout)
	}
	return rec, nil
}

// said quotes what wrk printed when it produced no JSON line (e.g. "unable to connect to ...").
func said(raw tool.Raw) string {
	s := strings.TrimSpace(string(raw.Stdout) + "\n" + string(raw.Stderr))
	if s == "" {
		return ""
	}
	if len(s) > 500 {
		s = s[:500] + "…"
	}
	return "; it said: " + s
}

// scheme is https:// for a TLS run: wrk speaks HTTPS/1.1 through OpenSSL without verifying the
// certificate (it has no option for a CA).
func scheme(inv tool.Invocation) string {
	if inv.CAFile != "" {
		return "https://"
	}
	return "http://"
}
