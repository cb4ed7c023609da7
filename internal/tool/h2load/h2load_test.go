package h2load

import (
	"encoding/binary"
	"encoding/json"
	"math"
	"strings"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/protobench/protobench/internal/contract"
	"github.com/protobench/protobench/internal/contract/benchpb"
	"github.com/protobench/protobench/internal/record"
	"github.com/protobench/protobench/internal/tool"
	"github.com/protobench/protobench/internal/tool/tooltest"
)

func base() tool.Invocation {
	return tool.Invocation{
		Target: "grpc", Address: "grpc:50051", Scheme: "grpc", Method: "GetUser", Model: "closed",
		Connections: 1, Concurrency: 100, Warmup: 5 * time.Second, Duration: 30 * time.Second,
		RawDir: "/raw", RawPrefix: "step1-r1-h2load",
	}
}

func with(f func(*tool.Invocation)) tool.Invocation { return tooltest.With(base(), f) }

func rest(f func(*tool.Invocation)) tool.Invocation {
	return with(func(i *tool.Invocation) {
		i.Target, i.Address, i.Scheme, i.HTTPVersion, i.Encoding = "rest", "rest:8080", "http", "2", "json"
		f(i)
	})
}

func TestRegistered(t *testing.T) { tooltest.Registered(t, "h2load", "h2load", true) }

func TestArgs(t *testing.T) {
	join := tooltest.Join
	grpcHeaders := []string{"-H", "content-type: application/grpc", "-H", "te: trailers"}
	log := []string{"--log-file", "/raw/step1-r1-h2load-requests.tsv"}
	body := []string{"-d", "/raw/step1-r1-h2load-body.bin"}
	cases := []struct {
		name string
		inv  tool.Invocation
		want []string
	}{
		{"gRPC on one channel: one client with 100 streams", base(), join(
			[]string{"-c", "1", "-m", "100", "-t", "1", "-D", "30s", "--warm-up-time", "5s"}, grpcHeaders, body, log,
			[]string{"http://grpc:50051/protobench.v1.Bench/GetUser"})},
		{"gRPC 4 x 25: two threads", with(func(i *tool.Invocation) { i.Connections, i.Concurrency = 4, 25 }), join(
			[]string{"-c", "4", "-m", "25", "-t", "2", "-D", "30s", "--warm-up-time", "5s"}, grpcHeaders, body, log,
			[]string{"http://grpc:50051/protobench.v1.Bench/GetUser"})},
		{"gRPC Divide, sub-second times in ms", with(func(i *tool.Invocation) {
			i.Method, i.Warmup, i.Duration = "Divide", 0, 1500*time.Millisecond
		}), join(
			[]string{"-c", "1", "-m", "100", "-t", "1", "-D", "1500ms", "--warm-up-time", "0s"}, grpcHeaders, body, log,
			[]string{"http://grpc:50051/protobench.v1.Bench/Divide"})},
		{"REST over h2c: GET, no body", rest(func(i *tool.Invocation) { i.Connections, i.Concurrency = 10, 10 }), join(
			[]string{"-c", "10", "-m", "10", "-t", "2", "-D", "30s", "--warm-up-time", "5s"}, log,
			[]string{"http://rest:8080/v1/users/42"})},
		{"REST over HTTP/1.1: connections x concurrency clients, one stream each", rest(func(i *tool.Invocation) {
			i.HTTPVersion, i.Connections, i.Concurrency = "1.1", 50, 2
		}), join(
			[]string{"-c", "100", "-m", "1", "-t", "2", "-D", "30s", "--warm-up-time", "5s", "--h1"}, log,
			[]string{"http://rest:8080/v1/users/42"})},
		{"REST without an HTTP version is HTTP/1.1", rest(func(i *tool.Invocation) { i.HTTPVersion = "" }), join(
			[]string{"-c", "100", "-m", "1", "-t", "2", "-D", "30s", "--warm-up-time", "5s", "--h1"}, log,
			[]string{"http://rest:8080/v1/users/42"})},
		{"REST Echo posts the raw payload", rest(func(i *tool.Invocation) { i.Method, i.PayloadBytes = "Echo", 1024 }), join(
			[]string{"-c", "1", "-m", "100", "-t", "1", "-D", "30s", "--warm-up-time", "5s",
				"-H", "content-type: application/octet-stream"}, body, log, []string{"http://rest:8080/v1/echo"})},
		{"REST protobuf GetUser asks for protobuf", rest(func(i *tool.Invocation) { i.Encoding = "protobuf" }), join(
			[]string{"-c", "1", "-m", "100", "-t", "1", "-D", "30s", "--warm-up-time", "5s",
				"-H", "accept: application/x-protobuf"}, log, []string{"http://rest:8080/v1/users/42"})},
		{"REST protobuf Multiply posts the protobuf request", rest(func(i *tool.Invocation) { i.Method, i.Encoding = "Multiply", "protobuf" }), join(
			[]string{"-c", "1", "-m", "100", "-t", "1", "-D", "30s", "--warm-up-time", "5s",
				"-H", "accept: application/x-protobuf", "-H", "content-type: application/x-protobuf"}, body, log, []string{"http://rest:8080/v1/multiply"})},
		{"REST Multiply posts JSON", rest(func(i *tool.Invocation) { i.Method = "Multiply" }), join(
			[]string{"-c", "1", "-m", "100", "-t", "1", "-D", "30s", "--warm-up-time", "5s",
				"-H", "content-type: application/json"}, body, log, []string{"http://rest:8080/v1/multiply"})},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) { tooltest.Args(t, Adapter{}, c.inv, c.want) })
	}
}

func TestCheck(t *testing.T) {
	cases := []struct {
		name string
		inv  tool.Invocation
		want string
	}{
		{"gRPC closed", base(), ""},
		{"REST h2c", rest(func(*tool.Invocation) {}), ""},
		{"net/rpc", with(func(i *tool.Invocation) { i.Target, i.Scheme = "netrpc", "netrpc" }), "HTTP only"},
		{"open model", with(func(i *tool.Invocation) { i.Model, i.RatePerSec = "open", 1000 }), "closed model only"},
		{"streaming", with(func(i *tool.Invocation) { i.Method = "EchoStream" }), "EchoStream"},
		{"gRPC over HTTP/1.1", with(func(i *tool.Invocation) { i.HTTPVersion = "1.1" }), "gRPC runs over HTTP/2"},
		{"REST protobuf", rest(func(i *tool.Invocation) { i.Encoding = "protobuf" }), ""},
		{"XML bodies", rest(func(i *tool.Invocation) { i.Encoding = "xml" }), `encoding "xml"`},
		{"no connections", with(func(i *tool.Invocation) { i.Connections = 0 }), "at least 1"},
		{"negative warm-up", with(func(i *tool.Invocation) { i.Warmup = -time.Second }), "warm-up"},
		{"zero duration", with(func(i *tool.Invocation) { i.Duration = 0 }), "duration"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) { tooltest.WantErr(t, Adapter{}.Check(c.inv), c.want) })
	}
}

// TestGRPCBody decodes the prepared body the way a gRPC server does: the 5-byte prefix, then the
// protobuf request.
func TestGRPCBody(t *testing.T) {
	cases := []struct {
		method string
		msg    proto.Message
		check  func(proto.Message) bool
	}{
		{"GetUser", &benchpb.GetUserRequest{}, func(m proto.Message) bool { return m.(*benchpb.GetUserRequest).Id == contract.RequestUserID }},
		{"Echo", &benchpb.EchoRequest{}, func(m proto.Message) bool {
			return string(m.(*benchpb.EchoRequest).Payload) == string(contract.Payload(1000))
		}},
		{"Multiply", &benchpb.ArithRequest{}, func(m proto.Message) bool {
			a := m.(*benchpb.ArithRequest)
			return a.A == contract.RequestA && a.B == contract.RequestB
		}},
	}
	for _, c := range cases {
		t.Run(c.method, func(t *testing.T) {
			inv := with(func(i *tool.Invocation) { i.Method, i.PayloadBytes = c.method, 1000 })
			b := Adapter{}.InputFiles(inv)[BodyFile(inv)]
			if len(b) < 5 || b[0] != 0 || int(binary.BigEndian.Uint32(b[1:5])) != len(b)-5 {
				t.Fatalf("body % x does not start with an uncompressed gRPC length prefix of its length", b[:min(len(b), 5)])
			}
			if err := proto.Unmarshal(b[5:], c.msg); err != nil {
				t.Fatal(err)
			}
			if !c.check(c.msg) {
				t.Errorf("request %v is not the contract's", c.msg)
			}
		})
	}
}

func TestRESTBodies(t *testing.T) {
	if files := (Adapter{}).InputFiles(rest(func(*tool.Invocation) {})); files != nil {
		t.Errorf("GET GetUser has input files %v", files)
	}
	inv := rest(func(i *tool.Invocation) { i.Method = "Divide" })
	var got map[string]int64
	if err := json.Unmarshal(Adapter{}.InputFiles(inv)[BodyFile(inv)], &got); err != nil {
		t.Fatal(err)
	}
	if got["a"] != contract.RequestA || got["b"] != contract.RequestB || len(got) != 2 {
		t.Errorf("Divide body %v", got)
	}
	inv.Encoding = "protobuf"
	var msg benchpb.ArithRequest
	if err := proto.Unmarshal(Adapter{}.InputFiles(inv)[BodyFile(inv)], &msg); err != nil {
		t.Fatal(err)
	}
	if msg.A != contract.RequestA || msg.B != contract.RequestB {
		t.Errorf("protobuf Divide body %v", &msg)
	}
}

// TestParseGolden checks Parse on real h2load runs. Counts and rates are h2load's summary lines;
// latencies are nearest-rank percentiles of the log's third column, computed outside Go (sort -n
// and awk), and the window is the log's first start and last start+duration.
func TestParseGolden(t *testing.T) {
	ms := func(us float64) float64 { return us / 1e3 }
	grpcNotes := []string{GRPCStatusNote}
	golden.CheckParse(t, goldenCases, tooltest.Expectations{
		Records: map[string]record.Record{
			"grpc-getuser-closed": {
				Requests: 17392, ThroughputRPS: 34784, DurationS: 0.5, Notes: grpcNotes,
				LatencyMs: record.Latency{Mean: 3887174.0 / 17392 / 1e3, P50: ms(112), P90: ms(298), P99: ms(2774), P999: ms(5145), Max: ms(22591)},
				StartUnix: 1795440381.513594, EndUnix: 1795440382.013878,
			},
			"grpc-echo-1024-closed": {
				Requests: 12625, ThroughputRPS: 25250, DurationS: 0.5, Notes: grpcNotes,
				LatencyMs: record.Latency{Mean: 943664.0 / 12625 / 1e3, P50: ms(54), P90: ms(85), P99: ms(199), P999: ms(3439), Max: ms(40610)},
				StartUnix: 1795440382.353532, EndUnix: 1795440382.853527,
			},
			// The server refused every call with RESOURCE_EXHAUSTED in an HTTP 200 response, and
			// h2load, which does not read grpc-status, counts them all as successes: the note says so.
			"grpc-echo-too-large-closed": {
				Requests: 15736, ThroughputRPS: 31472, DurationS: 0.5, Notes: grpcNotes,
				LatencyMs: record.Latency{Mean: 942689.0 / 15736 / 1e3, P50: ms(46), P90: ms(65), P99: ms(195), P999: ms(3746), Max: ms(22280)},
				StartUnix: 1795440383.096424, EndUnix: 1795440383.596416,
			},
			"rest-h1-getuser-closed": {
				Requests: 16684, ThroughputRPS: 33368, DurationS: 0.5,
				LatencyMs: record.Latency{Mean: 1982168.0 / 16684 / 1e3, P50: ms(76), P90: ms(141), P99: ms(1342), P999: ms(4260), Max: ms(13928)},
				StartUnix: 1795440383.828108, EndUnix: 1795440384.334584,
			},
			"rest-h1-multiply-closed": {
				Requests: 12681, ThroughputRPS: 25362, DurationS: 0.5,
				LatencyMs: record.Latency{Mean: 967925.0 / 12681 / 1e3, P50: ms(42), P90: ms(99), P99: ms(344), P999: ms(4955), Max: ms(35319)},
				StartUnix: 1795440384.566142, EndUnix: 1795440385.066267,
			},
			// HTTP 413 for every request: h2load's "failed".
			"rest-h1-echo-too-large-closed": {
				Requests: 19187, Errors: 19187, ThroughputRPS: 0, DurationS: 0.5, Error: "all 19187 requests failed",
				LatencyMs: record.Latency{Mean: 972229.0 / 19187 / 1e3, P50: ms(33), P90: ms(66), P99: ms(457), P999: ms(2193), Max: ms(9106)},
				StartUnix: 1795440385.296917, EndUnix: 1795440385.796051,
			},
			"rest-h2c-getuser-closed": {
				Requests: 18336, ThroughputRPS: 36672, DurationS: 0.5,
				LatencyMs: record.Latency{Mean: 3923210.0 / 18336 / 1e3, P50: ms(186), P90: ms(227), P99: ms(1021), P999: ms(4841), Max: ms(6727)},
				StartUnix: 1795440559.816546, EndUnix: 1795440560.316718,
			},
			"rest-h2c-protobuf-echo-closed": {
				Requests: 6474, ThroughputRPS: 12948, DurationS: 0.5,
				LatencyMs: record.Latency{Mean: 1953867.0 / 6474 / 1e3, P50: ms(167), P90: ms(381), P99: ms(3430), P999: ms(8652), Max: ms(11330)},
				StartUnix: 1795440560.601319, EndUnix: 1795440561.102397,
			},
			"unreachable-closed": {Error: "h2load completed no request", Notes: grpcNotes},
		},
		Tolerate: func(got *record.Record, want record.Record) {
			if math.Abs(got.LatencyMs.Mean-want.LatencyMs.Mean) < 1e-12 {
				got.LatencyMs.Mean = want.LatencyMs.Mean
			}
			for _, p := range []struct {
				got  *float64
				want float64
			}{{&got.StartUnix, want.StartUnix}, {&got.EndUnix, want.EndUnix}} {
				if math.Abs(*p.got-p.want) < 1e-6 {
					*p.got = p.want
				}
			}
		},
	})
}

func TestParseRejects(t *testing.T) {
	inv := golden.Invocation(goldenCases[0])
	good := golden.Load(t, goldenCases[0].Name)
	cases := []struct {
		name string
		raw  tool.Raw
		want string
	}{
		{"human output of another tool", tool.Raw{Stdout: []byte("Running 5s test @ http://x\n")}, "no summary"},
		{"no request log", tool.Raw{Stdout: good.Stdout}, "no request log"},
		{"log with a bad line", tool.Raw{Stdout: good.Stdout, Files: map[string][]byte{LogFile(inv): []byte("1795440381513594\t200\tslow\n")}}, "line 1"},
		{"empty log", tool.Raw{Stdout: good.Stdout, Files: map[string][]byte{LogFile(inv): nil}}, "holds no request"},
		{"count too large", tool.Raw{Stdout: []byte(strings.Replace(string(good.Stdout), "17392 done", "99999999999999999999 done", 1))}, "not a number"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := Adapter{}.Parse(inv, c.raw)
			tooltest.WantErr(t, err, c.want)
		})
	}
}

// FuzzParse feeds Parse summaries and request logs around the golden ones: whatever it accepts
// must be a plausible record.
func FuzzParse(f *testing.F) {
	inv := golden.Invocation(goldenCases[0])
	for _, c := range goldenCases {
		raw := golden.Load(f, c.Name)
		log := raw.Files[LogFile(golden.Invocation(c))]
		f.Add(raw.Stdout, log[:min(len(log), 4096)])
	}
	f.Fuzz(func(t *testing.T, stdout, log []byte) {
		rec, err := Adapter{}.Parse(inv, tool.Raw{Stdout: stdout, Files: map[string][]byte{LogFile(inv): log}})
		if err != nil || rec.Error != "" {
			return
		}
		l := rec.LatencyMs
		if rec.Requests <= 0 || rec.Errors < 0 || rec.Errors > rec.Requests || !(rec.DurationS > 0) || !(rec.ThroughputRPS > 0) ||
			l.P50 < 0 || l.P50 > l.P99 || l.P99 > l.Max || rec.EndUnix < rec.StartUnix {
			t.Errorf("implausible record from accepted input: %+v", rec)
		}
	})
}
