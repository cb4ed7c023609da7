package genbench

import (
	"bytes"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestFlags(t *testing.T) {
	tests := []struct {
		name string
		args []string
		want string // error substring; empty means valid
	}{
		{"defaults", nil, ""},
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

// The testdata files are real outputs of the generators from a bench-generators run (ghz's
// per-call details removed to keep the file small).
func TestParsers(t *testing.T) {
	tests := []struct {
		name    string
		file    string
		parse   func([]byte) (toolResult, error)
		wantRPS float64
	}{
		{"protobench", "protobench.json", parseProtobench, 18514},
		{"ghz", "ghz.json", parseGHZ, 4743.8},
		{"wrk", "wrk.stdout", parseWrk, 17923},
		{"k6 HTTP", "k6-http.summary.json", func(b []byte) (toolResult, error) { return parseK6(b, "http_reqs", "http_req_duration") }, 5152},
		{"k6 gRPC", "k6-grpc.summary.json", func(b []byte) (toolResult, error) { return parseK6(b, "iterations", "grpc_req_duration") }, 3380},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			raw, err := os.ReadFile(filepath.Join("testdata", tc.file))
			if err != nil {
				t.Fatal(err)
			}
			r, err := tc.parse(raw)
			if err != nil {
				t.Fatal(err)
			}
			if math.Abs(r.rps-tc.wantRPS)/tc.wantRPS > 0.001 {
				t.Errorf("rps %.1f, want %.1f", r.rps, tc.wantRPS)
			}
			if !(r.p50ms > 0 && r.p50ms <= r.p99ms) {
				t.Errorf("p50 %.3f ms, p99 %.3f ms: want 0 < p50 <= p99", r.p50ms, r.p99ms)
			}
		})
	}
}

func TestParsersRejectGarbage(t *testing.T) {
	for name, parse := range map[string]func([]byte) (toolResult, error){
		"protobench": parseProtobench,
		"ghz":        parseGHZ,
		"wrk":        parseWrk,
		"k6":         func(b []byte) (toolResult, error) { return parseK6(b, "http_reqs", "http_req_duration") },
	} {
		t.Run(name, func(t *testing.T) {
			if _, err := parse([]byte("Running 5s test @ http://x\n")); err == nil {
				t.Error("no error for output that is not the machine format")
			}
		})
	}
}
