package protobenchtool

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/protobench/protobench/internal/loadgen/loadcmd"
	"github.com/protobench/protobench/internal/record"
	"github.com/protobench/protobench/internal/servertest"
	"github.com/protobench/protobench/internal/tlscert"
	"github.com/protobench/protobench/internal/tool"
)

var labels = map[string]string{"scenario": "grpc-vs-rest", "step": "getuser", "run_id": "20260101T000000Z", "ignored": "x"}

func TestArgs(t *testing.T) {
	tests := []struct {
		name string
		inv  tool.Invocation
		want []string
	}{
		{
			name: "closed gRPC",
			inv: tool.Invocation{Target: "grpc", Address: "grpc:50051", Scheme: "grpc", Method: "GetUser", Model: "closed",
				Connections: 4, Concurrency: 25, Warmup: 5 * time.Second, Duration: 30 * time.Second, RawDir: "/raw", RawPrefix: "s1-r1", Labels: labels},
			want: []string{"load", "--target", "grpc://grpc:50051", "--target-name", "grpc", "--method", "GetUser",
				"--connections", "4", "--concurrency", "25", "--duration", "30s", "--warmup", "5s", "--payload-bytes", "0",
				"--out", "/raw/s1-r1.json", "--timeseries", "/raw/s1-r1.timeseries.json", "--metrics-listen", ":9102",
				"--label", "run_id=20260101T000000Z", "--label", "scenario=grpc-vs-rest", "--label", "step=getuser", "--progress", "off"},
		},
		{
			name: "open REST",
			inv: tool.Invocation{Target: "rest", Address: "rest:8080", Scheme: "http", Method: "Echo", Model: "open", RatePerSec: 2500.5,
				Connections: 64, Concurrency: 1, PayloadBytes: 1024, Duration: 10 * time.Second, RawDir: "/raw", RawPrefix: "s2"},
			want: []string{"load", "--target", "http://rest:8080", "--target-name", "rest", "--method", "Echo",
				"--connections", "64", "--concurrency", "1", "--rate", "2500.5", "--duration", "10s", "--warmup", "0s", "--payload-bytes", "1024",
				"--out", "/raw/s2.json", "--timeseries", "/raw/s2.timeseries.json", "--metrics-listen", ":9102", "--progress", "off"},
		},
		{
			name: "REST over h2c with protobuf bodies",
			inv: tool.Invocation{Target: "rest", Address: "rest:8080", Scheme: "http", Method: "GetUser", Model: "closed",
				HTTPVersion: "2", Encoding: "protobuf", Connections: 1, Concurrency: 100, Duration: 10 * time.Second, RawDir: "/raw", RawPrefix: "s4"},
			want: []string{"load", "--target", "http://rest:8080", "--target-name", "rest", "--method", "GetUser",
				"--http-version", "2", "--encoding", "protobuf",
				"--connections", "1", "--concurrency", "100", "--duration", "10s", "--warmup", "0s", "--payload-bytes", "0",
				"--out", "/raw/s4.json", "--timeseries", "/raw/s4.timeseries.json", "--metrics-listen", ":9102", "--progress", "off"},
		},
		{
			name: "HTTP churning 10 requests per connection",
			inv: tool.Invocation{Target: "rest", Address: "rest:8080", Scheme: "http", Method: "GetUser", Model: "closed",
				RequestsPerConnection: 10,
				Connections:           100, Concurrency: 1, Duration: 10 * time.Second, RawDir: "/raw", RawPrefix: "s5"},
			want: []string{"load", "--target", "http://rest:8080", "--target-name", "rest", "--method", "GetUser",
				"--connections", "100", "--concurrency", "1", "--requests-per-connection", "10", "--duration", "10s", "--warmup", "0s", "--payload-bytes", "0",
				"--out", "/raw/s5.json", "--timeseries", "/raw/s5.timeseries.json", "--metrics-listen", ":9102", "--progress", "off"},
		},
		{
			name: "ZeroMQ pattern",
			inv: tool.Invocation{Target: "zeromq", Address: "zeromq:5555", Scheme: "zmq", Method: "Echo", Pattern: "push", Model: "closed",
				Connections: 2, Concurrency: 1, PayloadBytes: 256, Duration: 10 * time.Second, RawDir: "/raw", RawPrefix: "s3"},
			want: []string{"load", "--target", "zmq://zeromq:5555", "--target-name", "zeromq", "--method", "Echo", "--zmq-pattern", "push",
				"--connections", "2", "--concurrency", "1", "--duration", "10s", "--warmup", "0s", "--payload-bytes", "256",
				"--out", "/raw/s3.json", "--timeseries", "/raw/s3.timeseries.json", "--metrics-listen", ":9102", "--progress", "off"},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			a := Adapter{}
			if got := a.Args(tc.inv); !reflect.DeepEqual(got, tc.want) {
				t.Errorf("Args:\n got %q\nwant %q", got, tc.want)
			}
			if err := a.Check(tc.inv); err != nil {
				t.Errorf("Check: %v", err)
			}
		})
	}
}

func TestCheck(t *testing.T) {
	base := tool.Invocation{Target: "grpc", Address: "grpc:50051", Scheme: "grpc", Method: "GetUser", Model: "closed",
		Connections: 1, Concurrency: 1, Duration: time.Second, RawDir: "/raw", RawPrefix: "x"}
	tests := []struct {
		name   string
		change func(*tool.Invocation)
		want   string
	}{
		{"stream over http", func(i *tool.Invocation) { i.Scheme, i.Address, i.Method = "http", "rest:8080", "EchoStream" }, "needs gRPC"},
		{"unknown scheme", func(i *tool.Invocation) { i.Scheme = "quic" }, `scheme "quic"`},
		{"pattern outside zmq", func(i *tool.Invocation) { i.Pattern = "push" }, "only to zmq://"},
		{"open without rate", func(i *tool.Invocation) { i.Model = "open" }, "positive rate"},
		{"unknown model", func(i *tool.Invocation) { i.Model = "burst" }, "model"},
		{"no connections", func(i *tool.Invocation) { i.Connections = 0 }, "--connections"},
		{"churn over zmq", func(i *tool.Invocation) {
			i.Target, i.Scheme, i.Address, i.RequestsPerConnection = "zeromq", "zmq", "zeromq:5555", 1
		}, "cannot churn"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			inv := base
			tc.change(&inv)
			err := Adapter{}.Check(inv)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("Check = %v, want an error containing %q", err, tc.want)
			}
		})
	}
}

// TestCheckReadsTheHostsCA: a TLS invocation names the CA where the generator's container
// sees it; the check on the host reads the run's own copy instead (the main job's TLS runs all
// failed at this check while it read the container's path), and leaves the CA out before the
// run has made it (a dry run).
func TestCheckReadsTheHostsCA(t *testing.T) {
	dir := t.TempDir()
	ca, err := tlscert.Generate(dir, tlscert.Options{})
	if err != nil {
		t.Fatal(err)
	}
	garbage := filepath.Join(dir, "garbage.pem")
	if err := os.WriteFile(garbage, []byte("not a certificate"), 0o644); err != nil {
		t.Fatal(err)
	}
	inv := tool.Invocation{Target: "grpc", Address: "grpc:50051", Scheme: "grpc", Method: "GetUser", Model: "closed",
		Connections: 1, Concurrency: 1, Duration: time.Second, RawDir: "/raw", RawPrefix: "x",
		CAFile: "/run/protobench/tls/ca.pem", ServerName: "grpc"}
	for _, tc := range []struct {
		name, host, want string
	}{
		{"the run's CA on the host", filepath.Join(ca.Dir, tlscert.CAFile), ""},
		{"before the run made it", filepath.Join(dir, "none", tlscert.CAFile), ""},
		{"no host copy named: CAFile is the host's", "", "no such file"},
		{"not a CA", garbage, "no PEM certificate"},
	} {
		inv.HostCAFile = tc.host
		err := Adapter{}.Check(inv)
		if tc.want == "" && err != nil || tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)) {
			t.Errorf("%s: Check = %v, want %q", tc.name, err, tc.want)
		}
	}
	if args := strings.Join(Adapter{}.Args(inv), " "); !strings.Contains(args, "--tls-ca /run/protobench/tls/ca.pem") {
		t.Errorf("the command line must keep the container's path: %s", args)
	}
}

// goldenCases are real runs captured by TestCaptureGolden into testdata/<name>/: the command
// line (cmd), stdout, stderr and the result file (result.json).
var goldenCases = []struct {
	name   string
	server string // servertest name, or "unreachable"
	inv    tool.Invocation
	check  func(t *testing.T, r record.Record)
}{
	{"grpc-getuser-closed", servertest.GRPC, tool.Invocation{Target: "grpc", Scheme: "grpc", Method: "GetUser", Model: "closed",
		Connections: 2, Concurrency: 4, Warmup: 500 * time.Millisecond, Duration: 2 * time.Second}, nil},
	{"rest-getuser-open", servertest.REST, tool.Invocation{Target: "rest", Scheme: "http", Method: "GetUser", Model: "open", RatePerSec: 500,
		Connections: 4, Concurrency: 1, Warmup: 500 * time.Millisecond, Duration: 2 * time.Second},
		func(t *testing.T, r record.Record) {
			if r.Rate != 500 || r.ServiceTimeMs == nil {
				t.Errorf("rate %v service time %v, want the open model's target and service time", r.Rate, r.ServiceTimeMs)
			}
		}},
	{"grpc-echostream-closed", servertest.GRPC, tool.Invocation{Target: "grpc", Scheme: "grpc", Method: "EchoStream", Model: "closed",
		Connections: 1, Concurrency: 4, PayloadBytes: 1024, Warmup: 500 * time.Millisecond, Duration: 2 * time.Second}, nil},
	{"netrpc-multiply-closed", servertest.NetRPC, tool.Invocation{Target: "netrpc", Scheme: "netrpc", Method: "Multiply", Model: "closed",
		Connections: 2, Concurrency: 8, Warmup: 500 * time.Millisecond, Duration: 2 * time.Second}, nil},
	{"zeromq-dealer-getuser-closed", servertest.ZeroMQ, tool.Invocation{Target: "zeromq", Scheme: "zmq", Method: "GetUser", Pattern: "dealer", Model: "closed",
		Connections: 2, Concurrency: 16, Warmup: 500 * time.Millisecond, Duration: 2 * time.Second}, nil},
	{"unreachable", "unreachable", tool.Invocation{Target: "grpc", Scheme: "grpc", Method: "GetUser", Model: "closed",
		Connections: 1, Concurrency: 1, Duration: time.Second},
		func(t *testing.T, r record.Record) {
			if r.Error == "" || !contains(r.Flags, record.FlagFailed) {
				t.Errorf("error %q flags %v, want a failed record with the error", r.Error, r.Flags)
			}
		}},
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

func TestParseGolden(t *testing.T) {
	for _, gc := range goldenCases {
		t.Run(gc.name, func(t *testing.T) {
			dir := filepath.Join("testdata", gc.name)
			result, err := os.ReadFile(filepath.Join(dir, "result.json"))
			if err != nil {
				t.Fatal(err)
			}
			stderr, _ := os.ReadFile(filepath.Join(dir, "stderr"))
			inv := gc.inv
			inv.RawPrefix = "run"
			rec, err := Adapter{}.Parse(inv, tool.Raw{Stderr: stderr, Files: map[string][]byte{"run.json": result}})
			if err != nil {
				t.Fatal(err)
			}
			if rec.Tool != "protobench" || rec.Target != inv.Target || rec.Method != inv.Method || rec.Model != inv.Model {
				t.Errorf("record %s/%s/%s/%s, want protobench/%s/%s/%s", rec.Tool, rec.Target, rec.Method, rec.Model, inv.Target, inv.Method, inv.Model)
			}
			if rec.Connections != inv.Connections || rec.Concurrency != inv.Concurrency || rec.PayloadBytes != inv.PayloadBytes {
				t.Errorf("record settings %d×%d %d B, want %d×%d %d B", rec.Connections, rec.Concurrency, rec.PayloadBytes, inv.Connections, inv.Concurrency, inv.PayloadBytes)
			}
			if gc.server != "unreachable" {
				if rec.Requests == 0 || rec.Errors != 0 || rec.ThroughputRPS <= 0 || rec.DurationS != inv.Duration.Seconds() {
					t.Errorf("requests %d errors %d throughput %v duration %v", rec.Requests, rec.Errors, rec.ThroughputRPS, rec.DurationS)
				}
				l := rec.LatencyMs
				if !(0 < l.P50 && l.P50 <= l.P90 && l.P90 <= l.P99 && l.P99 <= l.P999 && l.P999 <= l.Max) {
					t.Errorf("latency %+v is not an ordered summary", l)
				}
				if got := rec.ThroughputRPS * rec.DurationS; got < float64(rec.Requests)-1 || got > float64(rec.Requests)+1 {
					t.Errorf("throughput %v × duration %v ≠ requests %d", rec.ThroughputRPS, rec.DurationS, rec.Requests)
				}
			}
			if gc.check != nil {
				gc.check(t, rec)
			}
		})
	}
}

func TestParseMissingFile(t *testing.T) {
	_, err := Adapter{}.Parse(tool.Invocation{RawPrefix: "run"}, tool.Raw{Stderr: []byte("protobench load: --target is required\n")})
	if err == nil || !strings.Contains(err.Error(), "run.json") || !strings.Contains(err.Error(), "--target is required") {
		t.Errorf("Parse = %v, want the missing file and the generator's last words", err)
	}
}

func FuzzParse(f *testing.F) {
	if b, err := os.ReadFile(filepath.Join("testdata", goldenCases[0].name, "result.json")); err == nil {
		f.Add(b)
	}
	f.Add([]byte(`{"tool":"protobench"}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		_, _ = Adapter{}.Parse(tool.Invocation{RawPrefix: "x"}, tool.Raw{Files: map[string][]byte{"x.json": b}})
	})
}

// TestCaptureGolden regenerates testdata/ by running the real generator (in process, through the
// same Command the protobench binary runs) with Args against real servers. It only runs when
// asked:
//
//	PROTOBENCH_CAPTURE=1 go test -count=1 -run TestCaptureGolden ./internal/tool/protobenchtool
func TestCaptureGolden(t *testing.T) {
	if os.Getenv("PROTOBENCH_CAPTURE") == "" {
		t.Skip("set PROTOBENCH_CAPTURE=1 to capture golden files from real runs")
	}
	for _, gc := range goldenCases {
		t.Run(gc.name, func(t *testing.T) {
			inv := gc.inv
			if gc.server == "unreachable" {
				inv.Address = "127.0.0.1:1"
			} else {
				inv.Address = servertest.Start(t, gc.server).Main
			}
			inv.RawDir, inv.RawPrefix = t.TempDir(), "run"
			args := Adapter{}.Args(inv)
			// :9102 may be taken on a development machine; the command is otherwise Args verbatim.
			for i := range args {
				if args[i] == MetricsListen {
					args[i] = "127.0.0.1:0"
				}
			}
			var stdout, stderr bytes.Buffer
			code := loadcmd.Command(context.Background(), args[1:], &stdout, &stderr)
			t.Logf("exit %d", code)
			result, err := os.ReadFile(filepath.Join(inv.RawDir, "run.json"))
			if err != nil {
				t.Fatal(err)
			}
			var pretty bytes.Buffer
			if err := json.Indent(&pretty, result, "", "  "); err != nil {
				t.Fatal(err)
			}
			dir := filepath.Join("testdata", gc.name)
			if err := os.MkdirAll(dir, 0o755); err != nil {
				t.Fatal(err)
			}
			files := map[string][]byte{
				"cmd":         []byte("protobench " + strings.Join(args, " ") + "\n"),
				"stdout":      stdout.Bytes(),
				"stderr":      stderr.Bytes(),
				"result.json": pretty.Bytes(),
			}
			for name, b := range files {
				if err := os.WriteFile(filepath.Join(dir, name), b, 0o644); err != nil {
					t.Fatal(err)
				}
			}
		})
	}
}
