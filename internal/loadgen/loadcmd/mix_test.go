package loadcmd

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"path/filepath"
	"regexp"
	"strconv"
	"testing"
	"time"

	"github.com/protobench/protobench/internal/servertest"
)

// A mix sends every method of it to the real server, over the split the result records, with
// each driver's default client and the library one.
func TestMethodMixReachesEveryMethod(t *testing.T) {
	tests := []struct {
		server, scheme string
		extra          []string
	}{
		{servertest.GRPC, "grpc", nil},
		{servertest.GRPC, "grpc", []string{"--grpc-client", "grpc-go"}},
		{servertest.REST, "http", nil},
		{servertest.NetRPC, "netrpc", nil},
		{servertest.NetRPC, "netrpc", []string{"--netrpc-client", "net/rpc"}},
		{servertest.ZeroMQ, "zmq", nil},
		{servertest.PythonGRPC, "grpc", nil},
	}
	for _, tc := range tests {
		t.Run(fmt.Sprint(tc.server, tc.extra), func(t *testing.T) {
			ep := servertest.Start(t, tc.server)
			out := filepath.Join(t.TempDir(), "r.json")
			args := append([]string{"--target", tc.scheme + "://" + ep.Main, "--method", "Echo:50,GetUser:30,Multiply:20",
				"--payload-bytes", "256", "--connections", "10", "--concurrency", "2", "--duration", "1s", "--warmup", "0s",
				"--out", out}, tc.extra...)
			var stdout, stderr bytes.Buffer
			if code := Command(context.Background(), args, &stdout, &stderr); code != 0 {
				t.Fatalf("exit %d: %s", code, stderr.String())
			}
			r := readResult(t, out)
			if r.Errors != 0 || r.Requests == 0 {
				t.Fatalf("requests %d errors %d (%v)", r.Requests, r.Errors, r.ErrorsByCode)
			}
			if r.Method != "Echo:50,GetUser:30,Multiply:20" {
				t.Errorf("result method %q", r.Method)
			}
			split := map[string]int{}
			for _, m := range r.MethodMix {
				split[m.Method] = m.Connections
			}
			if split["Echo"] != 5 || split["GetUser"] != 3 || split["Multiply"] != 2 {
				t.Errorf("recorded split %v, want Echo 5, GetUser 3, Multiply 2", r.MethodMix)
			}
			// With no warm-up the client counts every request it completed, all of which the
			// server handled; the server may also have answered a few the run's end cancelled.
			// A server may count a request just after replying to it (ZeroMQ's does), so the
			// count is read until it catches up, for up to 5 s.
			var served map[string]float64
			var total float64
			for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(100 * time.Millisecond) {
				served, total = serverRequests(t, ep.Metrics), 0
				for _, m := range []string{"Echo", "GetUser", "Multiply"} {
					total += served[m]
				}
				if total >= float64(r.Requests) || time.Now().After(deadline) {
					break
				}
			}
			for _, m := range []string{"Echo", "GetUser", "Multiply"} {
				if served[m] == 0 {
					t.Errorf("the server handled no %s (by method: %v)", m, served)
				}
			}
			if total < float64(r.Requests) {
				t.Errorf("server handled %.0f requests, client counted %d", total, r.Requests)
			}
		})
	}
}

var requestsLine = regexp.MustCompile(`(?m)^protobench_server_requests_total\{[^}]*method="(\w+)"[^}]*\} (\S+)$`)

// serverRequests reads protobench_server_requests_total by method from the server's /metrics.
func serverRequests(t *testing.T, metricsAddr string) map[string]float64 {
	t.Helper()
	resp, err := http.Get("http://" + metricsAddr + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	out := map[string]float64{}
	for _, m := range requestsLine.FindAllStringSubmatch(string(body), -1) {
		v, _ := strconv.ParseFloat(m[2], 64)
		out[m[1]] += v
	}
	return out
}
