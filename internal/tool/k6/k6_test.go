package k6

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
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
		Target: "rest", Address: "rest:8080", Scheme: "http", Method: "GetUser", Model: "closed",
		Connections: 100, Concurrency: 1, Duration: 30 * time.Second,
		RawDir: "/raw", RawPrefix: "step1-r1-k6",
	}
}

func with(f func(*tool.Invocation)) tool.Invocation { return tooltest.With(base(), f) }

func TestRegistered(t *testing.T) { tooltest.Registered(t, "k6", "k6", false) }

func TestArgs(t *testing.T) {
	head := []string{"run", "--quiet", "--no-color", "--no-usage-report", "--address=",
		"--summary-trend-stats", "avg,min,med,max,p(90),p(99),p(99.9)",
		"--summary-export", "/raw/step1-r1-k6-summary.json"}
	join := tooltest.Join
	cases := []struct {
		name string
		inv  tool.Invocation
		want []string
	}{
		{"http closed GetUser", base(), join(head, []string{
			"-e", "PROTOBENCH_ADDRESS=rest:8080", "-e", "PROTOBENCH_METHOD=GetUser", "-e", "PROTOBENCH_PAYLOAD_BYTES=0",
			"-e", "PROTOBENCH_MODEL=closed", "-e", "PROTOBENCH_VUS=100", "-e", "PROTOBENCH_DURATION=30s",
			"/usr/share/protobench/k6/http.js"})},
		{"http open Echo: VUs are connections x concurrency", with(func(i *tool.Invocation) {
			i.Model, i.RatePerSec, i.Method, i.PayloadBytes, i.Connections, i.Concurrency = "open", 2500, "Echo", 4096, 4, 8
		}), join(head, []string{
			"-e", "PROTOBENCH_ADDRESS=rest:8080", "-e", "PROTOBENCH_METHOD=Echo", "-e", "PROTOBENCH_PAYLOAD_BYTES=4096",
			"-e", "PROTOBENCH_MODEL=open", "-e", "PROTOBENCH_VUS=32", "-e", "PROTOBENCH_RATE=2500", "-e", "PROTOBENCH_DURATION=30s",
			"/usr/share/protobench/k6/http.js"})},
		{"grpc closed Multiply loads the proto", with(func(i *tool.Invocation) {
			i.Target, i.Address, i.Scheme, i.Method, i.Duration = "python-grpc", "python-grpc:50051", "grpc", "Multiply", 1500*time.Millisecond
		}), join(head, []string{
			"-e", "PROTOBENCH_ADDRESS=python-grpc:50051", "-e", "PROTOBENCH_METHOD=Multiply", "-e", "PROTOBENCH_PAYLOAD_BYTES=0",
			"-e", "PROTOBENCH_MODEL=closed", "-e", "PROTOBENCH_VUS=100", "-e", "PROTOBENCH_DURATION=1.5s",
			"-e", "PROTOBENCH_PROTO_DIR=/usr/share/protobench/proto",
			"/usr/share/protobench/k6/grpc.js"})},
		{"grpc open with a fractional rate", with(func(i *tool.Invocation) {
			i.Target, i.Address, i.Scheme, i.Model, i.RatePerSec = "grpc", "grpc:50051", "grpc", "open", 99.5
		}), join(head, []string{
			"-e", "PROTOBENCH_ADDRESS=grpc:50051", "-e", "PROTOBENCH_METHOD=GetUser", "-e", "PROTOBENCH_PAYLOAD_BYTES=0",
			"-e", "PROTOBENCH_MODEL=open", "-e", "PROTOBENCH_VUS=100", "-e", "PROTOBENCH_RATE=99.5", "-e", "PROTOBENCH_DURATION=30s",
			"-e", "PROTOBENCH_PROTO_DIR=/usr/share/protobench/proto",
			"/usr/share/protobench/k6/grpc.js"})},
		{"https: the run's CA", with(func(i *tool.Invocation) {
			i.CAFile, i.ServerName = "/run/protobench/tls/ca.pem", "rest"
		}), join(head, []string{
			"-e", "PROTOBENCH_ADDRESS=rest:8080", "-e", "PROTOBENCH_METHOD=GetUser", "-e", "PROTOBENCH_PAYLOAD_BYTES=0",
			"-e", "PROTOBENCH_MODEL=closed", "-e", "PROTOBENCH_VUS=100", "-e", "PROTOBENCH_DURATION=30s",
			"-e", "PROTOBENCH_TLS_CA=/run/protobench/tls/ca.pem",
			"/usr/share/protobench/k6/http.js"})},
		{"grpc over TLS: the run's CA", with(func(i *tool.Invocation) {
			i.Target, i.Address, i.Scheme, i.CAFile, i.ServerName = "grpc", "grpc:50051", "grpc", "/run/protobench/tls/ca.pem", "grpc"
		}), join(head, []string{
			"-e", "PROTOBENCH_ADDRESS=grpc:50051", "-e", "PROTOBENCH_METHOD=GetUser", "-e", "PROTOBENCH_PAYLOAD_BYTES=0",
			"-e", "PROTOBENCH_MODEL=closed", "-e", "PROTOBENCH_VUS=100", "-e", "PROTOBENCH_DURATION=30s",
			"-e", "PROTOBENCH_PROTO_DIR=/usr/share/protobench/proto", "-e", "PROTOBENCH_TLS_CA=/run/protobench/tls/ca.pem",
			"/usr/share/protobench/k6/grpc.js"})},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			tooltest.Args(t, Adapter{}, c.inv, c.want)
		})
	}
}

// TestRemoteWrite checks the live-metrics part of the command line and the config file that
// carries what k6 v1.8.1 reads only from a file or the environment.
func TestRemoteWrite(t *testing.T) {
	inv := with(func(i *tool.Invocation) {
		i.PrometheusURL = "http://prometheus:9090"
		i.Labels = map[string]string{"scenario": "smoke", "step": "tools", "run_id": "20261123-1", "repeat": "2"}
	})
	want := []string{"run", "--quiet", "--no-color", "--no-usage-report", "--address=",
		"--summary-trend-stats", "avg,min,med,max,p(90),p(99),p(99.9)",
		"--summary-export", "/raw/step1-r1-k6-summary.json",
		"--config", "/raw/step1-r1-k6-config.json", "-o", "experimental-prometheus-rw",
		"--tag", "repeat=2", "--tag", "run_id=20261123-1", "--tag", "step=tools", "--tag", "target=rest", "--tag", "tool=k6",
		"-e", "PROTOBENCH_ADDRESS=rest:8080", "-e", "PROTOBENCH_METHOD=GetUser", "-e", "PROTOBENCH_PAYLOAD_BYTES=0",
		"-e", "PROTOBENCH_MODEL=closed", "-e", "PROTOBENCH_VUS=100", "-e", "PROTOBENCH_DURATION=30s",
		"/usr/share/protobench/k6/http.js"}
	tooltest.Args(t, Adapter{}, inv, want)

	files := Adapter{}.InputFiles(inv)
	var cfg struct {
		Collectors map[string]struct {
			URL                    string `json:"url"`
			PushInterval           string `json:"pushInterval"`
			TrendAsNativeHistogram bool   `json:"trendAsNativeHistogram"`
		} `json:"collectors"`
	}
	if err := json.Unmarshal(files["step1-r1-k6-config.json"], &cfg); err != nil {
		t.Fatalf("config file: %v (files %v)", err, files)
	}
	rw, ok := cfg.Collectors["experimental-prometheus-rw"]
	if !ok || rw.URL != "http://prometheus:9090/api/v1/write" || rw.PushInterval != "50ms" || !rw.TrendAsNativeHistogram {
		t.Errorf("remote-write config %+v", cfg)
	}

	off := base()
	if files := (Adapter{}).InputFiles(off); files != nil {
		t.Errorf("live metrics off, yet input files %v", files)
	}
	if args := strings.Join(Adapter{}.Args(off), " "); strings.Contains(args, "experimental-prometheus-rw") || strings.Contains(args, "--tag") {
		t.Errorf("live metrics off, yet %s", args)
	}
}

func TestCheck(t *testing.T) {
	cases := []struct {
		name    string
		inv     tool.Invocation
		wantErr string
	}{
		{"rest closed", base(), ""},
		{"grpc open", with(func(i *tool.Invocation) { i.Scheme = "grpc"; i.Model = "open"; i.RatePerSec = 0.5 }), ""},
		{"netrpc target", with(func(i *tool.Invocation) { i.Target = "netrpc"; i.Scheme = "netrpc" }), "http (rest) and grpc"},
		{"zeromq target", with(func(i *tool.Invocation) { i.Target = "zeromq"; i.Scheme = "zmq" }), "http (rest) and grpc"},
		{"streaming", with(func(i *tool.Invocation) { i.Scheme = "grpc"; i.Method = "EchoStream" }), "not supported"},
		{"open without rate", with(func(i *tool.Invocation) { i.Model = "open" }), "rate"},
		{"unknown model", with(func(i *tool.Invocation) { i.Model = "steps" }), "model"},
		{"h2c", with(func(i *tool.Invocation) { i.HTTPVersion = "2" }), "cannot send HTTP/2"},
		{"protobuf bodies", with(func(i *tool.Invocation) { i.Encoding = "protobuf" }), "protobuf bodies"},
		{"gRPC ignores HTTP settings", with(func(i *tool.Invocation) { i.Scheme = "grpc"; i.HTTPVersion = "2" }), ""},
		{"no duration", with(func(i *tool.Invocation) { i.Duration = 0 }), "duration"},
		{"no connections", with(func(i *tool.Invocation) { i.Connections = 0 }), "at least 1"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			tooltest.WantErr(t, Adapter{}.Check(c.inv), c.wantErr)
		})
	}
}

// TestParseGolden checks Parse against real k6 summary exports; expected figures are the
// export's iterations (count, rate), checks (fails) and request-duration trend, in ms as exported.
func TestParseGolden(t *testing.T) {
	want := map[string]record.Record{
		"http-getuser-closed": {
			Requests: 11281, ThroughputRPS: 5638.842101478375, DurationS: 11281 / 5638.842101478375,
			LatencyMs: record.Latency{Mean: 0.6138307439056796, P50: 0.422672, P90: 0.917202, P99: 3.800336000000002, P999: 18.843559960005344, Max: 106.486062},
		},
		"http-echo-1024-open": {
			Rate: 300, Requests: 580, ThroughputRPS: 289.8808315844802, DurationS: 580 / 289.8808315844802,
			LatencyMs: record.Latency{Mean: 0.6198640379310331, P50: 0.332751, P90: 0.5499363, P99: 7.207041010000044, P999: 25.105892442000243, Max: 27.971133},
		},
		"http-echo-too-large-closed": {
			Requests: 7508, Errors: 7508, ThroughputRPS: 0, DurationS: 7508 / 3753.61851787322,
			LatencyMs: record.Latency{Mean: 0.17642965423548196, P50: 0.1273845, P90: 0.1740691, P99: 1.4564366700000024, P999: 3.9743907870000457, Max: 67.804435},
			Error:     "all 7508 requests failed the ok check",
		},
		"grpc-getuser-closed": {
			Requests: 6740, ThroughputRPS: 3369.169176357787, DurationS: 6740 / 3369.169176357787,
			LatencyMs: record.Latency{Mean: 0.4796732096439173, P50: 0.311659, P90: 0.6993738000000002, P99: 3.7140416599999866, P999: 13.829130557000212, Max: 37.041391},
		},
		"grpc-multiply-open": {
			Rate: 200, Requests: 366, ThroughputRPS: 181.43928989159252, DurationS: 366 / 181.43928989159252,
			LatencyMs: record.Latency{Mean: 1.9144641393442625, P50: 0.490857, P90: 3.141199, P99: 24.868169500000032, P999: 69.20087705500022, Max: 70.845455},
		},
		"grpc-echo-too-large-closed": {
			Requests: 3309, Errors: 3309, ThroughputRPS: 0, DurationS: 3309 / 1639.5949757634987,
			LatencyMs: record.Latency{Mean: 0.3887982916288909, P50: 0.186158, P90: 0.36600820000000006, P99: 3.4986614400000042, P999: 28.54270994800212, Max: 59.370781},
			Error:     "all 3309 requests failed the ok check",
		},
		// Every connect was refused: no request was timed, so the latency stays zero. All failed:
		// the throughput of successful requests is zero (the duration still comes from k6's rate).
		"grpc-unreachable-closed": {
			Requests: 935, Errors: 935, ThroughputRPS: 0, DurationS: 935 / 934.7308937798734,
			Error: "all 935 requests failed the ok check",
		},
	}
	golden.CheckParse(t, goldenCases, tooltest.Expectations{
		Records: want,
		// The duration is count/rate at run time; the expectation is folded at compile time
		// with exact arithmetic, so the last bit may differ.
		Tolerate: func(got *record.Record, w record.Record) {
			if diff := got.DurationS - w.DurationS; diff < 1e-12 && diff > -1e-12 {
				got.DurationS = w.DurationS
			}
		},
	})
}

func TestParseBadOutput(t *testing.T) {
	summary := func(s string) tool.Raw {
		return tool.Raw{Files: map[string][]byte{"step1-r1-k6-summary.json": []byte(s)}}
	}
	cases := []struct {
		name    string
		raw     tool.Raw
		wantErr string
	}{
		{"no summary file, script error on stderr", tool.Raw{Stderr: []byte(`level=error msg="PROTOBENCH_ADDRESS is not set"`)}, "PROTOBENCH_ADDRESS is not set"},
		{"summary of another invocation", tool.Raw{Files: map[string][]byte{"other-summary.json": []byte("{}")}}, "no summary export step1-r1-k6-summary.json"},
		{"not JSON", summary("k6 summary"), "not a k6 summary export"},
		{"trend without p(99.9)", summary(`{"metrics":{"iterations":{"count":2,"rate":1},"http_req_duration":{"avg":1,"med":1,"max":1,"p(90)":1,"p(99)":1}}}`), "no p(99.9)"},
		{"negative count", summary(`{"metrics":{"iterations":{"count":-2,"rate":1}}}`), "negative"},
		{"fractional count", summary(`{"metrics":{"iterations":{"count":2.5,"rate":1}}}`), "not a whole number"},
		{"more failures than iterations", summary(`{"metrics":{"iterations":{"count":2,"rate":1},"checks":{"passes":0,"fails":3}}}`), "3 failed checks in 2 iterations"},
		{"iterations at rate 0", summary(`{"metrics":{"iterations":{"count":2,"rate":0}}}`), "rate of 0"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := Adapter{}.Parse(base(), c.raw)
			tooltest.WantErr(t, err, c.wantErr)
		})
	}
}

func TestParseNoIterations(t *testing.T) {
	raw := tool.Raw{
		Stderr: []byte("connection refused"),
		Files:  map[string][]byte{"step1-r1-k6-summary.json": []byte(`{"metrics":{"vus":{"value":1}}}`)},
	}
	rec, err := Adapter{}.Parse(base(), raw)
	if err != nil {
		t.Fatal(err)
	}
	if rec.Requests != 0 || !strings.Contains(rec.Error, "no iteration") || !strings.Contains(rec.Error, "connection refused") {
		t.Errorf("record %+v", rec)
	}
}

// TestScriptsMatchContract keeps the scripts in step with the Go side: the embedded copies are
// the files, and lib.js uses contract.Payload's pattern and the request parameters the other
// tools use.
func TestScriptsMatchContract(t *testing.T) {
	for _, name := range []string{"lib.js", "http.js", "grpc.js"} {
		file, err := os.ReadFile(filepath.Join("scripts", name))
		if err != nil {
			t.Fatal(err)
		}
		embedded, err := Scripts.ReadFile("scripts/" + name)
		if err != nil || !bytes.Equal(file, embedded) {
			t.Errorf("embedded %s differs from the file (%v)", name, err)
		}
	}
	lib, _ := Scripts.ReadFile("scripts/lib.js")
	pattern := strings.ReplaceAll(string(contract.Payload(56)), "\n", `\n`)
	for what, want := range map[string]string{
		"payload pattern": `'` + pattern + `'`,
		"user id":         "USER_ID = 42;",
		"a":               "ARITH_A = 1234567;",
		"b":               "ARITH_B = 89;",
	} {
		if !strings.Contains(string(lib), want) {
			t.Errorf("lib.js: %s: %s not found", what, want)
		}
	}
}

// TestScriptsSpeakTLS: with PROTOBENCH_TLS_CA set, http.js builds https:// URLs and grpc.js
// connects over TLS trusting that CA (k6/net/grpc connect's tls.cacerts, read with open in the
// init context); without it both stay cleartext. k6 itself is not on the build machine, so the
// scripts are checked as text; the compose stack runs them.
func TestScriptsSpeakTLS(t *testing.T) {
	read := func(name string) string {
		b, err := Scripts.ReadFile("scripts/" + name)
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	for name, wants := range map[string][]string{
		"lib.js":  {"tlsCA: env('PROTOBENCH_TLS_CA', '')"},
		"http.js": {"const base = `${config.tlsCA ? 'https' : 'http'}://${config.address}`;"},
		"grpc.js": {
			"const connectParams = config.tlsCA",
			"{ plaintext: false, tls: { cacerts: [open(config.tlsCA)] },",
			": { plaintext: true,",
			"client.connect(config.address, connectParams);",
		},
	} {
		src := read(name)
		for _, want := range wants {
			if !strings.Contains(src, want) {
				t.Errorf("%s lacks %q", name, want)
			}
		}
	}
	if !(Adapter{}).Capabilities().TLS {
		t.Error("k6 does not declare TLS")
	}
	if err := (Adapter{}).Check(with(func(i *tool.Invocation) { i.CAFile = "/run/protobench/tls/ca.pem" })); err != nil {
		t.Errorf("Check refuses an https invocation: %v", err)
	}
}

func FuzzParse(f *testing.F) {
	for _, c := range goldenCases {
		f.Add(golden.Load(f, c.Name).Files["k6-summary.json"])
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		inv := base()
		inv.RawPrefix = goldenRawPrefix
		rec, err := Adapter{}.Parse(inv, tool.Raw{Files: map[string][]byte{"k6-summary.json": data}})
		if err != nil {
			return
		}
		if rec.Requests < 0 || rec.Errors < 0 || rec.Errors > rec.Requests || rec.ThroughputRPS < 0 || rec.DurationS < 0 {
			t.Errorf("implausible record from accepted input: %+v", rec)
		}
	})
}
