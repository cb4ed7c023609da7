package wrk

import (
	"bytes"
	"math"
	"os"
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
	}
}

func with(f func(*tool.Invocation)) tool.Invocation { return tooltest.With(base(), f) }

func TestRegistered(t *testing.T) {
	for _, name := range []string{"wrk", "wrk2"} {
		tooltest.Registered(t, name, "wrk", false)
	}
}

func TestArgs(t *testing.T) {
	cases := []struct {
		name    string
		adapter Adapter
		inv     tool.Invocation
		want    []string
	}{
		{"wrk GetUser, 100 connections", Adapter{}, base(),
			[]string{"-t", "2", "-c", "100", "-d", "30s", "--timeout", "20s", "--latency", "-s", ScriptPath,
				"http://rest:8080/v1/users/42", "--", "method=GetUser", "id=42"}},
		{"wrk connections x concurrency become connections", Adapter{}, with(func(i *tool.Invocation) { i.Connections, i.Concurrency = 4, 25 }),
			[]string{"-t", "2", "-c", "100", "-d", "30s", "--timeout", "20s", "--latency", "-s", ScriptPath,
				"http://rest:8080/v1/users/42", "--", "method=GetUser", "id=42"}},
		{"wrk one connection, one thread", Adapter{}, with(func(i *tool.Invocation) { i.Connections = 1; i.Duration = 2 * time.Minute }),
			[]string{"-t", "1", "-c", "1", "-d", "120s", "--timeout", "20s", "--latency", "-s", ScriptPath,
				"http://rest:8080/v1/users/42", "--", "method=GetUser", "id=42"}},
		{"wrk Echo", Adapter{}, with(func(i *tool.Invocation) { i.Method = "Echo"; i.PayloadBytes = 4096 }),
			[]string{"-t", "2", "-c", "100", "-d", "30s", "--timeout", "20s", "--latency", "-s", ScriptPath,
				"http://rest:8080/v1/echo", "--", "method=Echo", "payload_bytes=4096"}},
		{"wrk Divide", Adapter{}, with(func(i *tool.Invocation) { i.Method = "Divide" }),
			[]string{"-t", "2", "-c", "100", "-d", "30s", "--timeout", "20s", "--latency", "-s", ScriptPath,
				"http://rest:8080/v1/divide", "--", "method=Divide", "a=1234567", "b=89"}},
		{"wrk2 open adds -R", Adapter{Rate: true}, with(func(i *tool.Invocation) { i.Model = "open"; i.RatePerSec = 5000 }),
			[]string{"-t", "2", "-c", "100", "-d", "30s", "-R", "5000", "--timeout", "20s", "--latency", "-s", ScriptPath,
				"http://rest:8080/v1/users/42", "--", "method=GetUser", "id=42"}},
		{"wrk2 rounds the rate", Adapter{Rate: true}, with(func(i *tool.Invocation) { i.Model = "open"; i.RatePerSec = 1234.5; i.Method = "Multiply" }),
			[]string{"-t", "2", "-c", "100", "-d", "30s", "-R", "1235", "--timeout", "20s", "--latency", "-s", ScriptPath,
				"http://rest:8080/v1/multiply", "--", "method=Multiply", "a=1234567", "b=89"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			tooltest.Args(t, c.adapter, c.inv, c.want)
		})
	}
}

func TestCheck(t *testing.T) {
	cases := []struct {
		name    string
		adapter Adapter
		inv     tool.Invocation
		wantErr string
	}{
		{"wrk closed", Adapter{}, base(), ""},
		{"wrk refuses the open model", Adapter{}, with(func(i *tool.Invocation) { i.Model = "open"; i.RatePerSec = 100 }), "wrk2"},
		{"wrk2 open", Adapter{Rate: true}, with(func(i *tool.Invocation) { i.Model = "open"; i.RatePerSec = 100 }), ""},
		{"wrk2 refuses the closed model", Adapter{Rate: true}, base(), "closed model"},
		{"wrk2 without rate", Adapter{Rate: true}, with(func(i *tool.Invocation) { i.Model = "open" }), "rate"},
		{"gRPC target", Adapter{}, with(func(i *tool.Invocation) { i.Target = "grpc"; i.Scheme = "grpc" }), "HTTP only"},
		{"streaming method", Adapter{}, with(func(i *tool.Invocation) { i.Method = "EchoStream" }), "not served over REST"},
		{"sub-second duration", Adapter{}, with(func(i *tool.Invocation) { i.Duration = 1500 * time.Millisecond }), "whole number of seconds"},
		{"no duration", Adapter{}, with(func(i *tool.Invocation) { i.Duration = 0 }), "whole number of seconds"},
		{"no connections", Adapter{}, with(func(i *tool.Invocation) { i.Connections = 0 }), "at least 1"},
		{"unknown model", Adapter{}, with(func(i *tool.Invocation) { i.Model = "ramp" }), "model"},
		{"HTTP/1.1 JSON said aloud", Adapter{}, with(func(i *tool.Invocation) { i.HTTPVersion, i.Encoding = "1.1", "json" }), ""},
		{"h2c", Adapter{}, with(func(i *tool.Invocation) { i.HTTPVersion = "2" }), "cannot send HTTP/2"},
		{"protobuf bodies", Adapter{}, with(func(i *tool.Invocation) { i.Encoding = "protobuf" }), "protobuf bodies"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			tooltest.WantErr(t, c.adapter.Check(c.inv), c.wantErr)
		})
	}
}

// TestParseGolden checks Parse against real wrk output; expected figures are the JSON line's
// values (µs → ms, successful requests / duration).
func TestParseGolden(t *testing.T) {
	want := map[string]record.Record{
		"getuser-closed": {
			Requests: 55725, DurationS: 2.099418, ThroughputRPS: 55725 / 2.099418,
			LatencyMs: record.Latency{Mean: 0.51403, P50: 0.109, P90: 1.406, P99: 6.01, P999: 11.86, Max: 15.485},
		},
		"echo-1024-closed": {
			Requests: 43941, DurationS: 2.019153, ThroughputRPS: 43941 / 2.019153,
			LatencyMs: record.Latency{Mean: 0.836901, P50: 0.07, P90: 0.588, P99: 26.327, P999: 71.372, Max: 76.377},
		},
		"multiply-closed": {
			Requests: 33043, DurationS: 2.100093, ThroughputRPS: 33043 / 2.100093,
			LatencyMs: record.Latency{Mean: 0.316782, P50: 0.091, P90: 0.707, P99: 3.869, P999: 6.849, Max: 7.844},
		},
		"echo-too-large-closed": {
			Requests: 26145, Errors: 26145, DurationS: 2.000418, ThroughputRPS: 0, // every response an error status: no successful throughput
			LatencyMs: record.Latency{Mean: 0.137217, P50: 0.071, P90: 0.092, P99: 2.391, P999: 6.171, Max: 8.223},
		},
	}
	golden.CheckParse(t, goldenCases, tooltest.Expectations{
		Records: want,
		// wrk exits at once when it cannot connect: no JSON line, and the error quotes wrk's own
		// complaint.
		Errors: map[string]string{"unreachable-closed": "unable to connect to 127.0.0.1:1"},
		// Throughput is a division done at run time; the expectation is folded at compile
		// time with exact arithmetic, so they may differ in the last bit.
		Tolerate: func(got *record.Record, w record.Record) {
			if math.Abs(got.ThroughputRPS-w.ThroughputRPS) <= 1e-9*w.ThroughputRPS {
				got.ThroughputRPS = w.ThroughputRPS
			}
		},
	})
}

func TestParseLines(t *testing.T) {
	line := func(s string) tool.Raw { return tool.Raw{Stdout: []byte("Running 1s test\n" + s + "\n")} }
	cases := []struct {
		name       string
		adapter    Adapter
		raw        tool.Raw
		wantErr    string
		wantErrors int64
		wantRecErr string
	}{
		{"socket errors and timeouts add to status errors", Adapter{Rate: true},
			line(`{"protobench_wrk":1,"duration_us":1000000,"requests":10,"bytes":1,"errors":{"connect":1,"read":2,"write":3,"status":4,"timeout":5},"latency_us":{"mean":1,"max":2,"p50":1,"p90":1,"p99":2,"p999":2}}`),
			"", 15, ""},
		{"nothing completed", Adapter{},
			line(`{"protobench_wrk":1,"duration_us":1000000,"requests":0,"bytes":0,"errors":{"connect":0,"read":7,"write":0,"status":0,"timeout":2},"latency_us":{"mean":0,"max":0,"p50":0,"p90":0,"p99":0,"p999":0}}`),
			"", 9, "no request completed: 0 connect, 7 read, 0 write errors, 2 timeouts"},
		{"no JSON line", Adapter{}, tool.Raw{Stdout: []byte("Running 1s test\n")}, "no protobench JSON line", 0, ""},
		{"wrk2 names itself", Adapter{Rate: true}, tool.Raw{Stderr: []byte("wrk2: Missing -R")}, "wrk2: no protobench JSON line", 0, ""},
		{"broken JSON", Adapter{}, line(`{"protobench_wrk":1,"duration_us":`), "unreadable JSON line", 0, ""},
		{"zero duration", Adapter{}, line(`{"protobench_wrk":1,"duration_us":0,"requests":1}`), "0 µs", 0, ""},
		{"negative count", Adapter{}, line(`{"protobench_wrk":1,"duration_us":5,"requests":-1}`), "negative", 0, ""},
		{"more error statuses than requests", Adapter{}, line(`{"protobench_wrk":1,"duration_us":5,"requests":1,"errors":{"status":2}}`), "2 error statuses in 1 requests", 0, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			rec, err := c.adapter.Parse(with(func(i *tool.Invocation) {}), c.raw)
			if c.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), c.wantErr) {
					t.Errorf("error %v, want one mentioning %q", err, c.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if rec.Errors != c.wantErrors || rec.Error != c.wantRecErr {
				t.Errorf("Errors %d Error %q, want %d %q", rec.Errors, rec.Error, c.wantErrors, c.wantRecErr)
			}
		})
	}
}

// TestScriptMatchesContract keeps report.lua in step with the Go side: the embedded copy is the
// file, the payload pattern is contract.Payload's, and the script's defaults are the adapter's
// request parameters.
func TestScriptMatchesContract(t *testing.T) {
	file, err := os.ReadFile("report.lua")
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(file, Script) {
		t.Error("embedded Script differs from report.lua")
	}
	pattern := string(contract.Payload(56))
	luaPattern := strings.ReplaceAll(pattern, "\n", `\n`)
	for name, want := range map[string]string{
		"payload pattern": `"` + luaPattern + `"`,
		"default id":      `id = "42"`,
		"default a":       `a = "1234567"`,
		"default b":       `b = "89"`,
	} {
		if !strings.Contains(string(Script), want) {
			t.Errorf("report.lua: %s: %s not found", name, want)
		}
	}
	if !strings.HasSuffix(pattern, "\n") || len(contract.Payload(57)) != 57 || contract.Payload(57)[56] != 'p' {
		t.Error("contract.Payload's pattern is no longer 56 bytes ending in a newline; update report.lua's payload()")
	}
}

func FuzzParse(f *testing.F) {
	for _, c := range goldenCases {
		f.Add(golden.Load(f, c.Name).Stdout)
	}
	f.Fuzz(func(t *testing.T, stdout []byte) {
		rec, err := Adapter{}.Parse(base(), tool.Raw{Stdout: stdout})
		if err != nil {
			return
		}
		if rec.Requests < 0 || rec.Errors < 0 || rec.DurationS <= 0 || rec.ThroughputRPS < 0 || rec.LatencyMs.Max < 0 {
			t.Errorf("implausible record from accepted input: %+v", rec)
		}
	})
}
