// Package h2load runs h2load (Debian's nghttp2-client, a C HTTP/2 client) as an independent
// cross-check on every HTTP/2 step: REST over h2c, REST over HTTP/1.1 (--h1) beside it, and gRPC
// unary calls sent as raw HTTP/2 requests. It reads h2load's summary and its per-request log.
//
// How a step maps onto h2load:
//
//   - Closed model only: -c connections (h2load's clients), each with -m concurrency streams in
//     flight (HTTP/2; over HTTP/1.1 a connection carries one request at a time, so -c is
//     connections × concurrency and -m 1, as for wrk). h2load's --rps caps each client's rate
//     without an intended-send-time schedule, which is not the open model, so Check refuses it.
//   - -D duration and --warm-up-time warm-up: h2load leaves the warm-up out of every figure, so
//     the runner need not run a separate warm-up.
//   - http:// URIs are HTTP/2 with prior knowledge (h2c); --h1 selects HTTP/1.1.
//   - REST bodies are JSON (Echo: the raw payload), or with encoding protobuf the messages gRPC
//     uses, sent as application/x-protobuf with Accept asking for a protobuf response.
//   - gRPC: POST /protobench.v1.Bench/<Method> with content-type application/grpc and te: trailers,
//     and the body from a prepared file (-d): the gRPC length prefix (a zero byte, then the length as
//     a big-endian uint32) and the protobuf request. h2load does not read trailers, so a call that
//     fails with a grpc-status in an HTTP 200 response counts as a success: Parse says so in the
//     record's notes, and only transport and HTTP failures count as errors.
//
// Parse takes the counts and the rate from h2load's summary on stdout (the only place h2load
// prints them) and the latency from --log-file, one tab-separated line per request of the
// measured window: start time (µs since the epoch), HTTP status, duration (µs).
package h2load

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"math"
	"path"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"

	"github.com/protobench/protobench/internal/contract"
	"github.com/protobench/protobench/internal/contract/benchpb"
	"github.com/protobench/protobench/internal/record"
	"github.com/protobench/protobench/internal/targets"
	"github.com/protobench/protobench/internal/tool"
)

// GRPCStatusNote is the note Parse attaches to every gRPC record.
const GRPCStatusNote = "h2load does not read grpc-status: gRPC calls that failed with an HTTP 200 response count as successes; only transport and HTTP errors are errors"

// maxThreads caps h2load's threads, as wrk's: one event loop per core the tool may get.
const maxThreads = 2

// Adapter is the h2load adapter.
type Adapter struct{}

func init() { tool.Register(Adapter{}) }

// Name is "h2load".
func (Adapter) Name() string { return "h2load" }

// Service is the compose service h2load runs in.
func (Adapter) Service() string { return "h2load" }

// OwnWarmup is true: --warm-up-time runs the warm-up on the same connections and leaves it out.
func (Adapter) OwnWarmup() bool { return true }

var unary = []string{contract.MethodGetUser, contract.MethodEcho, contract.MethodMultiply, contract.MethodDivide}

// restRoutes is each method's REST request (servers/rest); GetUser's id is in the path.
var restRoutes = map[string]struct{ method, path, contentType string }{
	contract.MethodGetUser:  {"GET", "/v1/users/" + strconv.Itoa(contract.RequestUserID), ""},
	contract.MethodEcho:     {"POST", "/v1/echo", "application/octet-stream"},
	contract.MethodMultiply: {"POST", "/v1/multiply", "application/json"},
	contract.MethodDivide:   {"POST", "/v1/divide", "application/json"},
}

// contentTypeProtobuf is REST's protobuf media type (servers/rest).
const contentTypeProtobuf = "application/x-protobuf"

// Capabilities: REST over HTTP/1.1 and h2c with JSON or protobuf bodies, and gRPC; unary methods,
// closed model.
func (Adapter) Capabilities() tool.Capabilities {
	var modes []tool.HTTPMode
	for _, v := range []string{targets.HTTP1, targets.HTTP2} {
		for _, e := range []string{targets.EncodingJSON, targets.EncodingProtobuf} {
			modes = append(modes, tool.HTTPMode{Version: v, Encoding: e})
		}
	}
	return tool.Capabilities{
		Protocols: []string{targets.HTTP, targets.GRPC, targets.Connect}, Methods: unary, Models: []string{"closed"},
		HTTP: modes, Image: "h2load", TLS: true, Program: "h2load",
		Limits: "h2load speaks HTTP (REST, Connect's unary calls, and gRPC without reading grpc-status), unary methods, closed model only",
		// gRPC: a gzipped body file with grpc-encoding and grpc-accept-encoding gzip. Without
		// them it advertises nothing.
		Gzip: []string{targets.GRPC},
	}
}

// Check rejects invocations h2load cannot run faithfully.
func (Adapter) Check(inv tool.Invocation) error {
	switch {
	case inv.Scheme != targets.GRPC && inv.Scheme != targets.HTTP && inv.Scheme != targets.Connect:
		return fmt.Errorf("h2load speaks HTTP only (REST, Connect and gRPC); target %q uses %q", inv.Target, inv.Scheme)
	case !slices.Contains(unary, inv.Method):
		return fmt.Errorf("h2load: method %q not supported; want one of %s", inv.Method, strings.Join(unary, ", "))
	case inv.Pattern != "":
		return fmt.Errorf("h2load: pattern %q not supported", inv.Pattern)
	case inv.Model != "closed":
		return fmt.Errorf("h2load: model %q not supported: h2load runs the closed model only (its --rps caps a client's rate but keeps no send schedule)", inv.Model)
	case inv.Connections < 1 || inv.Concurrency < 1:
		return fmt.Errorf("h2load: connections (%d) and concurrency (%d) must be at least 1", inv.Connections, inv.Concurrency)
	case inv.Duration < time.Millisecond:
		return fmt.Errorf("h2load: duration %s must be at least 1ms", inv.Duration)
	case inv.Warmup < 0:
		return fmt.Errorf("h2load: warm-up %s must not be negative", inv.Warmup)
	case inv.PayloadBytes < 0:
		return fmt.Errorf("h2load: payload_bytes %d must not be negative", inv.PayloadBytes)
	case inv.Scheme == targets.GRPC && inv.HTTPVersion != "" && inv.HTTPVersion != targets.HTTP2:
		return fmt.Errorf("h2load: gRPC runs over HTTP/2, not HTTP/%s", inv.HTTPVersion)
	case inv.HTTPVersion != "" && inv.HTTPVersion != targets.HTTP1 && inv.HTTPVersion != targets.HTTP2:
		return fmt.Errorf("h2load: http_version %q, want 1.1 or 2", inv.HTTPVersion)
	case inv.Encoding != "" && inv.Encoding != targets.EncodingJSON && inv.Encoding != targets.EncodingProtobuf:
		return fmt.Errorf("h2load: encoding %q, want json or protobuf", inv.Encoding)
	}
	return nil
}

// h1 reports whether the invocation runs over HTTP/1.1: REST without an HTTP version is REST as
// it has always run.
func h1(inv tool.Invocation) bool {
	return targets.OverHTTP[inv.Scheme] && inv.HTTPVersion != targets.HTTP2
}

// BodyFile is the base name, under RawDir, of the request body h2load sends (none for GET).
func BodyFile(inv tool.Invocation) string { return inv.RawPrefix + "-body.bin" }

// LogFile is the base name, under RawDir, of h2load's per-request log.
func LogFile(inv tool.Invocation) string { return inv.RawPrefix + "-requests.tsv" }

// protobufREST reports whether the invocation sends REST's protobuf bodies.
func protobufREST(inv tool.Invocation) bool {
	return inv.Scheme == targets.HTTP && inv.Encoding == targets.EncodingProtobuf
}

// connectJSON reports whether the invocation sends the Connect protocol's JSON bodies.
func connectJSON(inv tool.Invocation) bool {
	return inv.Scheme == targets.Connect && inv.Encoding == targets.EncodingJSON
}

// request is the method's request message, as gRPC, Connect and REST's protobuf encoding send
// it (Connect's JSON: protobuf's JSON mapping).
func request(inv tool.Invocation) []byte {
	var msg proto.Message
	switch inv.Method {
	case contract.MethodGetUser:
		msg = &benchpb.GetUserRequest{Id: contract.RequestUserID}
	case contract.MethodEcho:
		msg = &benchpb.EchoRequest{Payload: contract.Payload(inv.PayloadBytes)}
	default:
		msg = &benchpb.ArithRequest{A: contract.RequestA, B: contract.RequestB}
	}
	marshal := proto.Marshal
	if connectJSON(inv) {
		marshal = protojson.Marshal
	}
	b, err := marshal(msg)
	if err != nil {
		panic(err) // these messages always marshal
	}
	return b
}

// Body is the request body for the invocation, nil for a GET.
func Body(inv tool.Invocation) []byte {
	switch {
	case inv.Scheme == targets.GRPC:
		b := request(inv)
		framed := make([]byte, 5, 5+len(b))
		if inv.Compression == targets.CompressionGzip {
			// The one body h2load sends on every call, compressed once (flag 1): the server
			// inflates each, and h2load reads no reply, so gzip replies cost it nothing.
			b, framed[0] = gzipped(b), 1
		}
		binary.BigEndian.PutUint32(framed[1:], uint32(len(b)))
		return append(framed, b...)
	case inv.Scheme == targets.Connect:
		return request(inv)
	case restRoutes[inv.Method].method == "GET":
		return nil
	case protobufREST(inv):
		return request(inv)
	}
	switch inv.Method {
	case contract.MethodEcho:
		return contract.Payload(inv.PayloadBytes)
	case contract.MethodMultiply, contract.MethodDivide:
		b, _ := json.Marshal(map[string]int64{"a": contract.RequestA, "b": contract.RequestB})
		return b
	}
	return nil
}

func gzipped(b []byte) []byte {
	var out bytes.Buffer
	zw := gzip.NewWriter(&out)
	zw.Write(b) // writes to a bytes.Buffer do not fail
	zw.Close()
	return out.Bytes()
}

// InputFiles returns the body file h2load reads with -d, when the request has a body.
func (Adapter) InputFiles(inv tool.Invocation) map[string][]byte {
	if b := Body(inv); b != nil {
		return map[string][]byte{BodyFile(inv): b}
	}
	return nil
}

// Args is h2load's command line for the invocation.
func (Adapter) Args(inv tool.Invocation) []string {
	clients, streams := inv.Connections, inv.Concurrency
	if h1(inv) {
		clients, streams = inv.Connections*inv.Concurrency, 1
	}
	args := []string{
		"-c", strconv.Itoa(clients),
		"-m", strconv.Itoa(streams),
		"-t", strconv.Itoa(tool.Threads(clients, maxThreads)),
		"-D", durationArg(inv.Duration),
		"--warm-up-time", durationArg(inv.Warmup),
	}
	if h1(inv) {
		args = append(args, "--h1")
	}
	url := "http://" + inv.Address
	if inv.CAFile != "" {
		// h2load negotiates ALPN (h2, or http/1.1 with --h1) and does not verify the
		// certificate: it has no option for a CA, so TLS runs skip verification.
		url = "https://" + inv.Address
	}
	switch inv.Scheme {
	case targets.GRPC:
		args = append(args, "-H", "content-type: application/grpc", "-H", "te: trailers")
		if inv.Compression == targets.CompressionGzip {
			args = append(args, "-H", "grpc-encoding: gzip", "-H", "grpc-accept-encoding: gzip")
		}
		url += "/protobench.v1.Bench/" + inv.Method
	case targets.Connect:
		ctype := "application/proto"
		if connectJSON(inv) {
			ctype = "application/json"
		}
		args = append(args, "-H", "content-type: "+ctype, "-H", "connect-protocol-version: 1")
		url += "/protobench.v1.Bench/" + inv.Method
	default:
		r := restRoutes[inv.Method]
		switch {
		case protobufREST(inv):
			// Accept asks for a protobuf response, which a GET could not ask by its body.
			args = append(args, "-H", "accept: "+contentTypeProtobuf)
			if r.method != "GET" {
				args = append(args, "-H", "content-type: "+contentTypeProtobuf)
			}
		case r.contentType != "":
			args = append(args, "-H", "content-type: "+r.contentType)
		}
		url += r.path
	}
	if Body(inv) != nil {
		args = append(args, "-d", path.Join(inv.RawDir, BodyFile(inv)))
	}
	return append(args, "--log-file", path.Join(inv.RawDir, LogFile(inv)), url)
}

// durationArg renders a duration in h2load's syntax: an integer with a unit (ms, s).
func durationArg(d time.Duration) string {
	if d%time.Second == 0 {
		return strconv.FormatInt(int64(d/time.Second), 10) + "s"
	}
	return strconv.FormatInt(int64(d/time.Millisecond), 10) + "ms"
}

// The summary lines Parse reads; h2load has no machine-readable summary.
var (
	finishedLine = regexp.MustCompile(`(?m)^finished in \S+, ([0-9.]+) req/s`)
	requestsLine = regexp.MustCompile(`(?m)^requests: (\d+) total, (\d+) started, (\d+) done, (\d+) succeeded, (\d+) failed, (\d+) errored, (\d+) timeout$`)
)

// Parse reads h2load's summary (stdout) and its per-request log (Raw.Files[LogFile(inv)]).
//
// Requests are h2load's done requests of the measured window, failed ones included; errors its
// failed ones (HTTP status ≥ 400, resets, timeouts); throughput its req/s, which it computes over
// the measured window only. Latency is each request's time from its first byte sent to its
// stream's close, as h2load logs it.
func (a Adapter) Parse(inv tool.Invocation, raw tool.Raw) (record.Record, error) {
	rec := tool.NewRecord(a.Name(), inv)
	if inv.Scheme == targets.GRPC {
		rec.Notes = append(rec.Notes, GRPCStatusNote)
	}
	fin := finishedLine.FindSubmatch(raw.Stdout)
	req := requestsLine.FindSubmatch(raw.Stdout)
	if fin == nil || req == nil {
		return rec, fmt.Errorf("h2load: no summary (finished in ..., requests: ...) in its output%s", raw.StderrTail("h2load"))
	}
	rps, err := strconv.ParseFloat(string(fin[1]), 64)
	if err != nil || math.IsInf(rps, 0) {
		return rec, fmt.Errorf("h2load: req/s %q is not a number", fin[1])
	}
	var n [7]int64
	for i := range n {
		if n[i], err = strconv.ParseInt(string(req[i+1]), 10, 64); err != nil {
			return rec, fmt.Errorf("h2load: count %q in %q is not a number", req[i+1], req[0])
		}
	}
	// h2load also counts as failed the requests it never sent on a connection that broke, so
	// failures can outnumber done requests: errors are capped at the requests the record counts.
	done, failed := n[2], n[4]
	// h2load's req/s counts every done request, failed ones too: the record's throughput is of
	// the successful ones.
	rec.Requests, rec.Errors, rec.ThroughputRPS = done, min(failed, done), rps
	if done > 0 && rec.Errors > 0 {
		rec.ThroughputRPS = rps * float64(done-rec.Errors) / float64(done)
	}
	if done == 0 {
		rec.Error = "h2load completed no request" + raw.StderrTail("h2load")
		return rec, nil
	}
	if rps == 0 {
		return rec, fmt.Errorf("h2load: %d requests at 0 req/s", done)
	}
	rec.DurationS = float64(done) / rps
	if rec.Errors == rec.Requests {
		rec.Error = fmt.Sprintf("all %d requests failed", done)
	}

	name := LogFile(inv)
	log, ok := raw.Files[name]
	if !ok {
		return rec, fmt.Errorf("h2load: no request log %s among its output files", name)
	}
	l, err := readLog(log)
	if err != nil {
		return rec, fmt.Errorf("h2load: %s: %v", name, err)
	}
	if len(l.durations) == 0 {
		return rec, fmt.Errorf("h2load: %s holds no request though h2load reports %d done", name, done)
	}
	rec.LatencyMs = latency(l.durations)
	// The log's first start and last end are the measured window, to the microsecond.
	rec.StartUnix, rec.EndUnix = float64(l.firstStart)/1e6, float64(l.lastEnd)/1e6
	return rec, nil
}

// requestLog is what Parse takes from h2load's --log-file.
type requestLog struct {
	durations           []int64 // µs
	firstStart, lastEnd int64   // µs since the epoch
}

// readLog reads the log: start (µs since the epoch), HTTP status, duration (µs), tab-separated.
func readLog(log []byte) (requestLog, error) {
	var l requestLog
	sc := bufio.NewScanner(bytes.NewReader(log))
	for line := 1; sc.Scan(); line++ {
		f := bytes.Split(sc.Bytes(), []byte{'\t'})
		if len(f) != 3 {
			return l, fmt.Errorf("line %d: %d fields, want 3 (start µs, status, duration µs)", line, len(f))
		}
		start, err := strconv.ParseInt(string(f[0]), 10, 64)
		if err != nil || start <= 0 {
			return l, fmt.Errorf("line %d: start %q is not a time in µs since the epoch", line, f[0])
		}
		us, err := strconv.ParseInt(string(f[2]), 10, 64)
		if err != nil || us < 0 {
			return l, fmt.Errorf("line %d: duration %q is not a number of µs", line, f[2])
		}
		if l.firstStart == 0 || start < l.firstStart {
			l.firstStart = start
		}
		l.lastEnd = max(l.lastEnd, start+us)
		l.durations = append(l.durations, us)
	}
	return l, sc.Err()
}

// latency summarizes durations in µs as milliseconds, percentiles by nearest rank.
func latency(us []int64) record.Latency {
	sort.Slice(us, func(i, j int) bool { return us[i] < us[j] })
	var sum float64
	for _, v := range us {
		sum += float64(v)
	}
	at := func(p float64) float64 {
		i := int(math.Ceil(p/100*float64(len(us)))) - 1
		return float64(us[min(max(i, 0), len(us)-1)]) / 1e3
	}
	return record.Latency{
		Mean: sum / float64(len(us)) / 1e3,
		P50:  at(50), P90: at(90), P99: at(99), P999: at(99.9),
		Max: float64(us[len(us)-1]) / 1e3,
	}
}
