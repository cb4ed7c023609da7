package ghz

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/protobench/protobench/internal/contract"
	"github.com/protobench/protobench/internal/record"
	"github.com/protobench/protobench/internal/tool"
	"github.com/protobench/protobench/internal/tool/tooltest"
)

func base() tool.Invocation {
	return tool.Invocation{
		Target: "grpc", Address: "grpc:50051", Scheme: "grpc", Method: "GetUser", Model: "closed",
		Connections: 4, Concurrency: 25, Duration: 30 * time.Second,
		RawDir: "/raw", RawPrefix: "step1-r1-ghz",
	}
}

func with(f func(*tool.Invocation)) tool.Invocation { return tooltest.With(base(), f) }

func TestRegistered(t *testing.T) { tooltest.Registered(t, "ghz", "ghz", false) }

func TestArgs(t *testing.T) {
	common := []string{"--insecure", "--disable-template-data", "--import-paths", ProtoDir, "--proto", ProtoFile}
	tail := []string{"--count-errors", "--duration-stop", "ignore", "-O", "json", "grpc:50051"}
	join := tooltest.Join
	cases := []struct {
		name string
		inv  tool.Invocation
		want []string
	}{
		{"closed GetUser: workers are connections x concurrency", base(), join(common,
			[]string{"--call", "protobench.v1.Bench.GetUser", "-d", `{"id":42}`, "--connections", "4", "-c", "100", "-z", "30s"}, tail)},
		{"open GetUser: total rate, async", with(func(i *tool.Invocation) { i.Model = "open"; i.RatePerSec = 2500 }), join(common,
			[]string{"--call", "protobench.v1.Bench.GetUser", "-d", `{"id":42}`, "--connections", "4", "-c", "100", "-z", "30s", "--rps", "2500", "--async"}, tail)},
		{"open rate is rounded to a whole number", with(func(i *tool.Invocation) { i.Model = "open"; i.RatePerSec = 99.6 }), join(common,
			[]string{"--call", "protobench.v1.Bench.GetUser", "-d", `{"id":42}`, "--connections", "4", "-c", "100", "-z", "30s", "--rps", "100", "--async"}, tail)},
		{"Multiply", with(func(i *tool.Invocation) {
			i.Method = "Multiply"
			i.Connections, i.Concurrency = 1, 1
			i.Duration = 90 * time.Second
		}), join(common,
			[]string{"--call", "protobench.v1.Bench.Multiply", "-d", `{"a":1234567,"b":89}`, "--connections", "1", "-c", "1", "-z", "1m30s"}, tail)},
		{"Divide", with(func(i *tool.Invocation) { i.Method = "Divide" }), join(common,
			[]string{"--call", "protobench.v1.Bench.Divide", "-d", `{"a":1234567,"b":89}`, "--connections", "4", "-c", "100", "-z", "30s"}, tail)},
		{"Echo 16 bytes inline", with(func(i *tool.Invocation) { i.Method = "Echo"; i.PayloadBytes = 16 }), join(common,
			[]string{"--call", "protobench.v1.Bench.Echo", "-d", `{"payload":"cHJvdG9iZW5jaC1wYXlsbw=="}`, "--connections", "4", "-c", "100", "-z", "30s"}, tail)},
		{"Echo 100 KiB goes to a data file", with(func(i *tool.Invocation) { i.Method = "Echo"; i.PayloadBytes = 100 << 10 }), join(common,
			[]string{"--call", "protobench.v1.Bench.Echo", "-D", "/raw/step1-r1-ghz-data.json", "--connections", "4", "-c", "100", "-z", "30s"}, tail)},
		{"Echo 10 MB raises the message limits", with(func(i *tool.Invocation) { i.Method = "Echo"; i.PayloadBytes = 10_000_000 }), join(common,
			[]string{"--call", "protobench.v1.Bench.Echo", "-D", "/raw/step1-r1-ghz-data.json", "--connections", "4", "-c", "100", "-z", "30s",
				"--max-send-message-size", "10065536", "--max-recv-message-size", "10065536"}, tail)},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			tooltest.Args(t, Adapter{}, c.inv, c.want)
		})
	}
}

func TestInputFiles(t *testing.T) {
	cases := []struct {
		name         string
		payloadBytes int
		wantFile     bool
	}{
		{"small payload stays inline", 1024, false},
		{"just under the inline limit", 47 << 10, false}, // base64 grows it by 4/3: 62.7 KiB
		{"above the inline limit", 49 << 10, true},
		{"10 MB", 10_000_000, true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			inv := with(func(i *tool.Invocation) { i.Method = "Echo"; i.PayloadBytes = c.payloadBytes })
			files := Adapter{}.InputFiles(inv)
			args := strings.Join(Adapter{}.Args(inv), " ")
			if !c.wantFile {
				if len(files) != 0 || !strings.Contains(args, " -d ") {
					t.Fatalf("want inline -d and no files, got %d files", len(files))
				}
				return
			}
			data, ok := files["step1-r1-ghz-data.json"]
			if !ok || !strings.Contains(args, "-D /raw/step1-r1-ghz-data.json") {
				t.Fatalf("want -D and the data file, got files %v", keys(files))
			}
			var msg struct{ Payload string }
			if err := json.Unmarshal(data, &msg); err != nil {
				t.Fatal(err)
			}
			payload, err := base64.StdEncoding.DecodeString(msg.Payload)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(payload, contract.Payload(c.payloadBytes)) {
				t.Error("data file payload differs from contract.Payload")
			}
		})
	}
}

func keys(m map[string][]byte) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}

func TestCheck(t *testing.T) {
	cases := []struct {
		name    string
		inv     tool.Invocation
		wantErr string // "" = accepted
	}{
		{"grpc closed", base(), ""},
		{"python-grpc open", with(func(i *tool.Invocation) { i.Target = "python-grpc"; i.Model = "open"; i.RatePerSec = 100 }), ""},
		{"REST target", with(func(i *tool.Invocation) { i.Target = "rest"; i.Scheme = "http" }), "gRPC only"},
		{"ZeroMQ target", with(func(i *tool.Invocation) { i.Target = "zeromq"; i.Scheme = "zmq" }), "gRPC only"},
		{"streaming method", with(func(i *tool.Invocation) { i.Method = "EchoStream" }), "not supported"},
		{"open without rate", with(func(i *tool.Invocation) { i.Model = "open" }), "rate"},
		{"open with a rate below 1", with(func(i *tool.Invocation) { i.Model = "open"; i.RatePerSec = 0.4 }), "rate"},
		{"unknown model", with(func(i *tool.Invocation) { i.Model = "ramp" }), "model"},
		{"no connections", with(func(i *tool.Invocation) { i.Connections = 0 }), "at least 1"},
		{"no duration", with(func(i *tool.Invocation) { i.Duration = 0 }), "duration"},
		{"pattern", with(func(i *tool.Invocation) { i.Pattern = "dealer" }), "pattern"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			tooltest.WantErr(t, Adapter{}.Check(c.inv), c.wantErr)
		})
	}
}

// TestParseGolden checks Parse against real ghz reports. Expected figures were read from the raw
// JSON independently (count, total, average, slowest, rps, latencyDistribution; p99.9 by sorting
// the details' latencies and taking ghz's rank).
func TestParseGolden(t *testing.T) {
	want := map[string]record.Record{
		"getuser-closed": {
			Requests: 11108, Errors: 0, DurationS: 1.999749367, ThroughputRPS: 5554.696095073198,
			LatencyMs: record.Latency{Mean: 0.534017, P50: 0.435195, P90: 0.846859, P99: 2.322955, P999: 5.467735, Max: 11.74498},
		},
		"getuser-open": {
			Rate: 500, Requests: 998, Errors: 0, DurationS: 2.000998445, ThroughputRPS: 498.75101227277565,
			LatencyMs: record.Latency{Mean: 0.396041, P50: 0.389628, P90: 0.488894, P99: 0.588841, P999: 3.912298, Max: 3.912298},
		},
		"echo-1024-closed": {
			Requests: 8377, Errors: 0, DurationS: 1.999944076, ThroughputRPS: 4188.6171221119685,
			LatencyMs: record.Latency{Mean: 0.319514, P50: 0.264232, P90: 0.479525, P99: 1.63151, P999: 5.797055, Max: 9.937481},
		},
		"echo-too-large-open": {
			Rate: 200, Requests: 399, Errors: 399, DurationS: 2.022162967, ThroughputRPS: 0,
			LatencyMs: record.Latency{Mean: 0.612711, P50: 0.551497, P90: 0.717741, P99: 3.215387, P999: 6.169959, Max: 6.169959},
			Error:     "all 399 calls failed; most often: rpc error: code = ResourceExhausted desc = payload of 1024 bytes exceeds the limit of 512",
		},
		"unreachable-open": {
			Rate: 50, Requests: 49, Errors: 49, DurationS: 1.021930867, ThroughputRPS: 0,
			LatencyMs: record.Latency{Mean: 0.056989, P50: 0.05602, P90: 0.067993, P99: 0.094505, P999: 0.094505, Max: 0.094505},
			Error:     `all 49 calls failed; most often: rpc error: code = Unavailable desc = connection error: desc = "transport: Error while dialing: dial tcp 127.0.0.1:1: connect: connection refused"`,
		},
	}
	golden.CheckParse(t, goldenCases, tooltest.Expectations{Records: want})
}

func TestParseBadOutput(t *testing.T) {
	cases := []struct {
		name    string
		raw     tool.Raw
		wantErr string
	}{
		{"empty stdout with ghz's complaint", tool.Raw{Stderr: []byte("Bad argument: --call is required")}, "--call is required"},
		{"summary text instead of JSON", tool.Raw{Stdout: []byte("Summary:\n  Count: 10\n")}, "not ghz's JSON report"},
		{"JSON without count", tool.Raw{Stdout: []byte(`{"rps": 5}`)}, "no count"},
		{"negative totals", tool.Raw{Stdout: []byte(`{"count": -1}`)}, "negative"},
		{"more errors than calls", tool.Raw{Stdout: []byte(`{"count": 1, "statusCodeDistribution": {"Unavailable": 2}}`)}, "2 errors in 1 calls"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := Adapter{}.Parse(base(), c.raw)
			tooltest.WantErr(t, err, c.wantErr)
		})
	}
}

func TestRank(t *testing.T) {
	cases := []struct {
		name string
		p    float64
		n    int
		want int
	}{
		{"p50 of 10 lands on a whole rank", 50, 10, 4},
		{"p99 of 1000", 99, 1000, 989},
		{"p99.9 of 998", 99.9, 998, 997},
		{"p99.9 of 1", 99.9, 1, 0},
		{"p10 of 5", 10, 5, 0},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := rank(c.p, c.n); got != c.want {
				t.Errorf("rank(%v, %d) = %d, want %d", c.p, c.n, got, c.want)
			}
		})
	}
}

func FuzzParse(f *testing.F) {
	// The smaller golden reports only: mutating a megabyte of details per input would leave the
	// fuzzer little time for anything else.
	for _, name := range []string{"getuser-open", "echo-too-large-open", "unreachable-open"} {
		f.Add(golden.Load(f, name).Stdout)
	}
	f.Add([]byte(`{"count":3,"details":[{"latency":5},{"latency":-1,"error":"x"}],"options":{"count-errors":true}}`))
	f.Fuzz(func(t *testing.T, stdout []byte) {
		rec, err := Adapter{}.Parse(base(), tool.Raw{Stdout: stdout})
		if err != nil {
			return
		}
		if rec.Requests < 0 || rec.Errors < 0 || rec.Errors > rec.Requests || rec.ThroughputRPS < 0 || rec.DurationS < 0 {
			t.Errorf("implausible record from accepted input: %+v", rec)
		}
	})
}
