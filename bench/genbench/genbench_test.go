package genbench

import (
	"bytes"
	"errors"
	"flag"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/protobench/protobench/internal/tool"
)

func TestFlags(t *testing.T) {
	tests := []struct {
		name string
		args []string
		want string // error substring; empty means valid
	}{
		{"defaults", nil, ""},
		{"h2c and h2load", []string{"--protocols", "grpc,h2c", "--tools", "h2load"}, ""},
		{"TLS rows", []string{"--protocols", "grpc-tls,https,h2", "--tools", "h2load,wrk"}, ""},
		{"memory mode", []string{"--memory-requests", "10000000"}, ""},
		{"short duration", []string{"--duration", "1s"}, "--duration"},
		{"same cores", []string{"--server-core", "1", "--client-core", "1"}, "two different CPUs"},
		{"connections not dividing", []string{"--grpc-connections", "5"}, "divide"},
		{"unknown protocol", []string{"--protocols", "grpc,quic"}, `"quic"`},
		{"unknown tool", []string{"--tools", "jmeter"}, `"jmeter"`},
		{"stray argument", []string{"now"}, "unexpected argument"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := parseFlags(tc.args, &bytes.Buffer{})
			switch {
			case tc.want == "" && err != nil:
				t.Errorf("unexpected error %v", err)
			case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
				t.Errorf("error %v, want one containing %q", err, tc.want)
			}
		})
	}
}

// TestGeneratorsFromRegistry: every registered tool that runs the closed model is a row, with
// package native's words on how to install it; tools that cannot (wrk2) are not.
func TestGeneratorsFromRegistry(t *testing.T) {
	for _, name := range tool.Names() {
		a, _ := tool.Lookup(name)
		g, ok := generators[name]
		switch closed := a.Capabilities().Runs("closed"); {
		case name == ours:
		case closed && (!ok || g.install == ""):
			t.Errorf("%s runs the closed model but is no row with an install hint: %+v", name, g)
		case !closed && ok:
			t.Errorf("%s cannot run the closed model but is a row", name)
		}
	}
	if len(generatorNames) != len(generators) {
		t.Errorf("generatorNames %v and generators disagree", generatorNames)
	}
}

func defaults(t *testing.T) options {
	t.Helper()
	o, err := parseFlags(nil, &bytes.Buffer{})
	if err != nil {
		t.Fatal(err)
	}
	return o
}

// TestPlan checks which generators meet which server, as the adapters' Check decides, and the
// topology each protocol gets.
func TestPlan(t *testing.T) {
	o := defaults(t)
	want := map[string][]string{
		"grpc": {"protobench", "protobench-lib", "ghz", "h2load", "k6"},
		"http": {"protobench", "h2load", "k6", "wrk"},
		"h2c":  {"protobench", "h2load"},
		// Over TLS our generator is on the libraries already: no protobench-lib row.
		"grpc-tls": {"protobench", "protobench-lib", "ghz", "h2load", "k6"},
		"https":    {"protobench", "h2load", "k6", "wrk"},
		"h2":       {"protobench", "h2load"},
		// connect-go: h2load sends Connect's unary calls too; ghz and k6 speak its gRPC only.
		"connect":      {"protobench", "h2load"},
		"connect-h2c":  {"protobench", "h2load"},
		"connect-grpc": {"protobench", "protobench-lib", "ghz", "h2load", "k6"},
		"netrpc":       {"protobench", "protobench-lib"},
		"zmq":          {"protobench", "protobench-lib"},
	}
	for _, p := range protocolNames {
		if got := o.generatorsFor(p); !slices.Equal(got, want[p]) {
			t.Errorf("%s: generators %v, want %v", p, got, want[p])
		}
	}
	topology := map[string][2]int{"grpc": {4, 16}, "http": {64, 1}, "h2c": {4, 16}, "grpc-tls": {4, 16}, "https": {64, 1}, "h2": {4, 16}, "connect": {64, 1}, "connect-h2c": {4, 16}, "connect-grpc": {4, 16}, "netrpc": {4, 16}, "zmq": {4, 16}}
	for p, tc := range topology {
		inv := o.invocation(p, "127.0.0.1:1", time.Second, "/raw", "x")
		if inv.Connections != tc[0] || inv.Concurrency != tc[1] || inv.Connections*inv.Concurrency != o.inflight {
			t.Errorf("%s: %d connections × %d, want %d × %d", p, inv.Connections, inv.Concurrency, tc[0], tc[1])
		}
	}
	o.tools = []string{ours, "wrk"}
	if got := o.generatorsFor("http"); !slices.Equal(got, []string{"protobench", "wrk"}) {
		t.Errorf("--tools wrk: generators %v", got)
	}
}

// TestNativeArgs checks what changes from the adapters' command lines outside the images: the
// image's paths become the checkout's, a tool with threads runs one on its pinned core, and our
// generator serves no live metrics.
func TestNativeArgs(t *testing.T) {
	o := defaults(t)
	for _, tc := range []struct {
		gen, protocol string
		want, absent  string
	}{
		{"k6", "grpc", "/src/internal/tool/k6/scripts/grpc.js", "/usr/share/protobench"},
		{"ghz", "grpc", "/src/proto", "/usr/share/protobench"},
		{"wrk", "http", "/src/internal/tool/wrk/report.lua", "/usr/share/protobench"},
		{"wrk", "http", "-t 1 ", "-t 2 "},
		{"h2load", "grpc", "-t 1 ", "-t 2 "},
		{"protobench", "grpc", "--progress", "--metrics-listen"},
	} {
		a, _ := tool.Lookup(generators[tc.gen].tool)
		args := strings.Join(nativeArgs(a, o.invocation(tc.protocol, "127.0.0.1:1", time.Second, "/raw", "x"), "/src"), " ")
		if !strings.Contains(args, tc.want) || strings.Contains(args, tc.absent) {
			t.Errorf("%s: %s\nwant %q in it and no %q", tc.gen, args, tc.want, tc.absent)
		}
	}
}

// goldenRuns are the runs kept in testdata/run, with the throughput each generator reported.
var goldenRuns = []struct {
	protocol, gen string
	wantRPS       float64
}{
	{"grpc", "protobench", 39278},
	{"grpc", "protobench-lib", 30206},
	{"http", "protobench", 15271.5},
	{"http", "wrk", 43425 / (2001849 / 1e6)},
	{"h2c", "protobench", 17606},
}

// TestGoldenRuns reads back real runs: testdata/run is the --out folder of
//
//	bench-generators --protocols grpc,http,h2c --duration 2s --warmup 0s --out ...
//
// on the 2-core build machine, busy with other work (ghz and k6 were not installed, and h2load's
// request logs are large: their adapters have golden files of their own). Each run is read the way bench-generators reads it, through its adapter. The
// figures are the generators' own, read off the files by hand: protobench's throughput_rps, wrk's
// requests over duration_us, h2load's req/s line.
func TestGoldenRuns(t *testing.T) {
	o := defaults(t)
	dir := filepath.Join("testdata", "run")
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(entries) == 0 {
		t.Fatal("no golden run")
	}
	for _, tc := range goldenRuns {
		t.Run(tc.protocol+"/"+tc.gen, func(t *testing.T) {
			a, _ := tool.Lookup(generators[tc.gen].tool)
			inv := o.invocation(tc.protocol, "", 2*time.Second, dir, tc.protocol+"-"+tc.gen+"-run")
			rec, err := readRun(a, inv)
			if err != nil {
				t.Fatal(err)
			}
			if math.Abs(rec.ThroughputRPS-tc.wantRPS) > 1e-9*tc.wantRPS {
				t.Errorf("throughput %v, want %v", rec.ThroughputRPS, tc.wantRPS)
			}
			if !(rec.LatencyMs.P50 > 0 && rec.LatencyMs.P50 <= rec.LatencyMs.P99) || rec.Errors != 0 {
				t.Errorf("p50 %v ms, p99 %v ms, errors %d: want 0 < p50 <= p99 and no error", rec.LatencyMs.P50, rec.LatencyMs.P99, rec.Errors)
			}
		})
	}
}

// TestReadRunRejects: a run whose output is not the generator's machine format is an error.
func TestReadRunRejects(t *testing.T) {
	dir := t.TempDir()
	for _, f := range []string{"x.stdout", "x.stderr"} {
		if err := os.WriteFile(filepath.Join(dir, f), []byte("Running 5s test @ http://x\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	o := defaults(t)
	for _, gen := range []string{"protobench", "wrk", "h2load", "ghz", "k6"} {
		a, _ := tool.Lookup(generators[gen].tool)
		if _, err := readRun(a, o.invocation("grpc", "", time.Second, dir, "x")); err == nil {
			t.Errorf("%s: no error for output that is not its machine format", gen)
		}
	}
	if _, err := readRun(nil, o.invocation("grpc", "", time.Second, dir, "missing")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("missing run: %v", err)
	}
}

// TestReportTable renders the table for fixed measurements and compares it with
// testdata/table.txt (-update rewrites it).
func TestReportTable(t *testing.T) {
	ms := []measurement{
		{protocol: "grpc", tool: "protobench", rps: 52000, serverCPU: 98, clientCPU: 61, serverUS: 18.8, clientUS: 11.7, p50ms: 1.2, p99ms: 2.5},
		{protocol: "grpc", tool: "h2load", rps: 50000, serverCPU: 99, clientCPU: 40, serverUS: 19.8, clientUS: 8, p50ms: 1.25, p99ms: 2.75},
		{protocol: "grpc", tool: "ghz", err: errors.New("boom")},
		{protocol: "h2c", tool: "protobench", rps: 40000, serverCPU: 90, clientCPU: 50, serverUS: 22.5, clientUS: 12.5, p50ms: 1.5, p99ms: 3},
		{protocol: "h2c", tool: "h2load", rps: 42000, serverCPU: 97, clientCPU: 35, serverUS: 23.1, clientUS: 8.3, p50ms: 1.4, p99ms: 2.9, errors: 3},
		{protocol: "grpc-tls", tool: "protobench", rps: 30000, serverCPU: 99, clientCPU: 95, serverUS: 33, clientUS: 31.7, p50ms: 2.1, p99ms: 4.2,
			tls: "TLS 1.3 TLS_AES_128_GCM_SHA256 X25519 h2"},
		{protocol: "grpc-tls", tool: "h2load", rps: 33000, serverCPU: 99, clientCPU: 45, serverUS: 30, clientUS: 13.6, p50ms: 1.9, p99ms: 3.8,
			tls: "TLS 1.3 TLS_AES_128_GCM_SHA256 X25519 h2"},
		{protocol: "https", tool: "protobench", rps: 20000, serverCPU: 99, clientCPU: 80, serverUS: 49.5, clientUS: 40, p50ms: 3, p99ms: 6,
			tls: "TLS 1.3 TLS_AES_128_GCM_SHA256 X25519 http/1.1"},
		{protocol: "https", tool: "wrk", rps: 20500, serverCPU: 99, clientCPU: 60, serverUS: 48.3, clientUS: 29.3, p50ms: 3, p99ms: 6.1,
			tls: "TLS 1.3 TLS_AES_128_GCM_SHA256 X25519 no ALPN"},
	}
	var got bytes.Buffer
	report(&got, ms)
	path := filepath.Join("testdata", "table.txt")
	if *update {
		if err := os.WriteFile(path, got.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if got.String() != string(want) {
		t.Errorf("report:\n%s\nwant (testdata/table.txt):\n%s", got.String(), want)
	}
}

var update = flag.Bool("update", false, "rewrite testdata/table.txt")
