package loadcmd

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/protobench/protobench/internal/contract"
	"github.com/protobench/protobench/internal/loadgen"
	"github.com/protobench/protobench/internal/record"
	"github.com/protobench/protobench/internal/repo"
	"github.com/protobench/protobench/internal/servertest"
)

func TestBadInputExitsTwo(t *testing.T) {
	tests := []struct {
		name string
		args []string
		want string // in stderr
	}{
		{"no target", []string{}, "--target is required"},
		{"unknown flag", []string{"--target", "grpc://127.0.0.1:1", "--bogus"}, "flag provided but not defined"},
		{"unknown scheme", []string{"--target", "ftp://127.0.0.1:21"}, `scheme "ftp" is not one of`},
		{"no port", []string{"--target", "grpc://127.0.0.1"}, "want host:port"},
		{"bad port", []string{"--target", "http://127.0.0.1:99999"}, "port \"99999\""},
		{"path in target", []string{"--target", "http://127.0.0.1:8080/v1/users/1"}, "only scheme://host:port"},
		{"not a URL", []string{"--target", "127.0.0.1:8080"}, "want scheme://host:port"},
		{"zero connections", []string{"--target", "grpc://127.0.0.1:1", "--connections", "0"}, "--connections must be at least 1"},
		{"negative rate", []string{"--target", "grpc://127.0.0.1:1", "--rate", "-5"}, "--rate must be"},
		{"two models", []string{"--target", "grpc://127.0.0.1:1", "--rate", "100", "--ramp", "1:2"}, "only one of"},
		{"steps with duration", []string{"--target", "grpc://127.0.0.1:1", "--rate-steps", "100:1s", "--duration", "5s"}, "--duration conflicts"},
		{"bad step", []string{"--target", "grpc://127.0.0.1:1", "--rate-steps", "100:1s,fast:2s"}, "step 2"},
		{"bad ramp", []string{"--target", "grpc://127.0.0.1:1", "--ramp", "100"}, "--ramp"},
		{"max-inflight in the closed model", []string{"--target", "grpc://127.0.0.1:1", "--max-inflight", "10"}, "open model"},
		{"unbounded label", []string{"--target", "grpc://127.0.0.1:1", "--label", "host=a"}, "not one of scenario, step, run_id"},
		{"zmq flag on grpc", []string{"--target", "grpc://127.0.0.1:1", "--zmq-pattern", "req"}, "only to zmq://"},
		{"grpc client on http", []string{"--target", "http://127.0.0.1:1", "--grpc-client", "grpc-go"}, "only to grpc://"},
		{"unknown client", []string{"--target", "netrpc://127.0.0.1:1", "--netrpc-client", "jsonrpc"}, "lean or net/rpc"},
		{"unknown zmq pattern", []string{"--target", "zmq://127.0.0.1:1", "--zmq-pattern", "pair"}, "--zmq-pattern \"pair\""},
		{"stream over http", []string{"--target", "http://127.0.0.1:1", "--method", "EchoStream"}, "needs gRPC"},
		{"mix over too few connections", []string{"--target", "grpc://127.0.0.1:1", "--method", "Echo:1,GetUser:1", "--connections", "1"}, "at least 2 connections"},
		{"mix of one method", []string{"--target", "grpc://127.0.0.1:1", "--method", "Echo:1", "--connections", "2"}, "at least two methods"},
		{"unknown method in a mix", []string{"--target", "http://127.0.0.1:1", "--method", "Echo:1,EchoStream:1", "--connections", "2"}, "needs gRPC"},
		{"unknown method", []string{"--target", "netrpc://127.0.0.1:1", "--method", "Frobnicate"}, "--method \"Frobnicate\""},
		{"payload too big", []string{"--target", "grpc://127.0.0.1:1", "--payload-bytes", "999999999"}, "--payload-bytes"},
		{"bad progress", []string{"--target", "grpc://127.0.0.1:1", "--progress", "maybe"}, "--progress"},
		{"timeseries over the result", []string{"--target", "grpc://127.0.0.1:1", "--out", "r.json", "--timeseries", "r.json"}, "--timeseries \"r.json\": the same file as --out"},
		{"bad duration", []string{"--target", "grpc://127.0.0.1:1", "--duration", "ten"}, "invalid value"},
		{"stray argument", []string{"--target", "grpc://127.0.0.1:1", "extra"}, "unexpected argument"},
		{"negative churn", []string{"--target", "grpc://127.0.0.1:1", "--requests-per-connection", "-1"}, "--requests-per-connection must be 0"},
		{"churn over zmq", []string{"--target", "zmq://127.0.0.1:1", "--requests-per-connection", "10"}, "zmq:// cannot churn connections"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			code := Command(context.Background(), tc.args, &stdout, &stderr)
			if code != loadgen.ExitUsage {
				t.Errorf("exit code %d, want %d; stderr: %s", code, loadgen.ExitUsage, stderr.String())
			}
			if !strings.Contains(stderr.String(), tc.want) {
				t.Errorf("stderr %q does not contain %q", stderr.String(), tc.want)
			}
		})
	}
}

// freeAddr returns a loopback address nothing listens on.
func freeAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	return addr
}

func TestUnreachableTargetNamesTheAddress(t *testing.T) {
	refused := freeAddr(t)
	// A listener that accepts and never speaks: TCP connects, the protocol never does.
	silent, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer silent.Close()
	go func() {
		for {
			c, err := silent.Accept()
			if err != nil {
				return
			}
			defer c.Close()
		}
	}()
	tests := []struct {
		name   string
		target string
		want   string
	}{
		{"grpc refused", "grpc://" + refused, "connection refused"},
		{"http refused", "http://" + refused, "connection refused"},
		{"netrpc refused", "netrpc://" + refused, "connection refused"},
		{"zmq refused", "zmq://" + refused, "connection refused"},
		{"grpc silent", "grpc://" + silent.Addr().String(), "not ready"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			out := filepath.Join(t.TempDir(), "r.json")
			var stdout, stderr bytes.Buffer
			code := Command(context.Background(), []string{"--target", tc.target, "--connect-timeout", "1s", "--duration", "1s", "--out", out}, &stdout, &stderr)
			if code != loadgen.ExitFail {
				t.Fatalf("exit code %d, want %d", code, loadgen.ExitFail)
			}
			addr := strings.SplitN(tc.target, "://", 2)[1]
			if msg := stderr.String(); !strings.Contains(msg, addr) || !strings.Contains(msg, tc.want) {
				t.Errorf("stderr %q should name %s and say %q", msg, addr, tc.want)
			}
			r := readResult(t, out)
			if !contains(r.Flags, record.FlagFailed) || r.Error == "" {
				t.Errorf("result flags %v error %q, want failed with the error", r.Flags, r.Error)
			}
		})
	}
}

func readResult(t *testing.T, path string) loadgen.Result {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var r loadgen.Result
	if err := json.Unmarshal(b, &r); err != nil {
		t.Fatal(err)
	}
	return r
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// stallingServer is the one server written here: a REST GetUser that pauses every response for a
// second while the stall is on.
func stallingServer(t *testing.T, stalling *atomic.Bool) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := json.Marshal(contract.UserByID(contract.RequestUserID))
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if stalling.Load() {
			time.Sleep(time.Second)
		}
		w.Header().Set("Content-Type", "application/json")
		w.Write(body)
	})}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	return ln.Addr().String()
}

func TestStallIsInCorrectedLatencyOnly(t *testing.T) {
	var stalling atomic.Bool
	addr := stallingServer(t, &stalling)
	cfg, _, err := loadgen.ParseArgs([]string{
		"--target", "http://" + addr, "--rate", "500", "--duration", "8s", "--warmup", "0s",
		"--connections", "1", "--concurrency", "8",
	}, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	// The stall covers the second second of the run. Up to 16 requests see it (each of the 8
	// slots may start a second one as the stall ends); 8 s at 500/s keeps them well under the
	// 1 % of requests that p99 would let through.
	go func() {
		time.Sleep(1500 * time.Millisecond)
		stalling.Store(true)
		time.Sleep(time.Second)
		stalling.Store(false)
	}()
	res, err := loadgen.Run(context.Background(), cfg, loadgen.RunOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if res.Errors != 0 {
		t.Fatalf("errors %v", res.ErrorsByCode)
	}
	if res.LatencyMs.P99 < 500 {
		t.Errorf("corrected p99 = %.3f ms, want the 1 s stall in it (requests queued behind it)", res.LatencyMs.P99)
	}
	if res.ServiceTimeMs.P99 >= 500 {
		t.Errorf("service-time p99 = %.3f ms, want it free of the stall (only the few requests in flight saw it)", res.ServiceTimeMs.P99)
	}
	if res.ServiceTimeMs.Max < 900 {
		t.Errorf("service-time max = %.3f ms, want the stalled requests themselves to show 1 s", res.ServiceTimeMs.Max)
	}
	if res.SchedulerLagMs == nil || res.SchedulerLagMs.Max < 500 {
		t.Errorf("scheduler lag %+v, want the queueing during the stall", res.SchedulerLagMs)
	}
}

func TestOpenModelRateAccuracy(t *testing.T) {
	if raceEnabled {
		t.Skip("under the race detector the in-process server is too slow for 2000 rps; the generator rightly flags rate-not-met")
	}
	ep := servertest.Start(t, servertest.GRPC)
	cfg, _, err := loadgen.ParseArgs([]string{
		"--target", "grpc://" + ep.Main, "--rate", "2000", "--duration", "3s", "--warmup", "500ms",
		"--connections", "2", "--concurrency", "16",
	}, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	res, err := loadgen.Run(context.Background(), cfg, loadgen.RunOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got := res.ThroughputRPS; got < 2000*0.98 || got > 2000*1.02 {
		t.Errorf("throughput %.1f rps, want within 2%% of 2000 (scheduler lag %+v, incomplete %d, series %+v)", got, res.SchedulerLagMs, res.Incomplete, res.Series)
	}
	if contains(res.Flags, record.FlagRateNotMet) {
		t.Errorf("flags %v on a fast server", res.Flags)
	}
	for _, p := range res.Series {
		if p.TargetRPS != 2000 {
			t.Errorf("series point %+v: target rate, want 2000", p)
		}
	}
}

func TestRateNotMetIsFlagged(t *testing.T) {
	var stalling atomic.Bool
	stalling.Store(true) // every reply takes a second
	addr := stallingServer(t, &stalling)
	cfg, _, err := loadgen.ParseArgs([]string{
		"--target", "http://" + addr, "--rate", "100", "--duration", "2s", "--warmup", "0s",
		"--connections", "1", "--concurrency", "4",
	}, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	res, _ := loadgen.Run(context.Background(), cfg, loadgen.RunOptions{})
	if !contains(res.Flags, record.FlagRateNotMet) {
		t.Errorf("achieved %.1f of 100 rps with flags %v, want rate-not-met", res.ThroughputRPS, res.Flags)
	}
}

// buildServer builds one of the real server binaries.
func buildServer(t *testing.T, name string) string {
	t.Helper()
	root, err := repo.Root()
	if err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(t.TempDir(), name)
	cmd := exec.Command("go", "build", "-o", bin, "./servers/"+name)
	cmd.Dir = root
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build ./servers/%s: %v\n%s", name, err, out)
	}
	return bin
}

var mainAddr = regexp.MustCompile(`main:(127\.0\.0\.1:\d+)`)

// startServerProcess runs a real server binary on loopback and returns its main address.
func startServerProcess(t *testing.T, bin string, extra ...string) (*exec.Cmd, string) {
	t.Helper()
	args := append([]string{"--listen", "127.0.0.1:0", "--metrics-listen", "127.0.0.1:0"}, extra...)
	cmd := exec.Command(bin, args...)
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	found := make(chan string, 1)
	go func() {
		buf := make([]byte, 64<<10)
		var seen []byte
		sent := false
		for {
			n, err := stderr.Read(buf)
			seen = append(seen, buf[:n]...)
			if m := mainAddr.FindSubmatch(seen); m != nil && !sent {
				found <- string(m[1])
				sent = true
			}
			if err != nil {
				return
			}
		}
	}()
	select {
	case addr := <-found:
		return cmd, addr
	case <-time.After(20 * time.Second):
		t.Fatalf("%s did not log its address", bin)
	}
	return nil, ""
}

func TestServerKilledMidRun(t *testing.T) {
	tests := []struct {
		server string
		scheme string
		extra  []string
	}{
		{"grpc", "grpc", nil},
		{"rest", "http", nil},
		{"netrpc", "netrpc", nil},
		{"zeromq", "zmq", []string{"--pull-listen", "127.0.0.1:0", "--pub-listen", "127.0.0.1:0"}},
	}
	for _, tc := range tests {
		t.Run(tc.server, func(t *testing.T) {
			bin := buildServer(t, tc.server)
			cmd, addr := startServerProcess(t, bin, tc.extra...)
			out := filepath.Join(t.TempDir(), "r.json")
			// The kill comes 2.5 s after the 500 ms warm-up would end on an idle machine, so
			// that a loaded one still has measured requests to keep.
			go func() {
				time.Sleep(3 * time.Second)
				cmd.Process.Kill()
			}()
			var stdout, stderr bytes.Buffer
			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			defer cancel()
			code := Command(ctx, []string{"--target", tc.scheme + "://" + addr, "--duration", "20s", "--warmup", "500ms",
				"--connections", "2", "--concurrency", "4", "--connect-timeout", "1s", "--out", out}, &stdout, &stderr)
			if ctx.Err() != nil {
				t.Fatal("the run did not end after the server died")
			}
			if code != loadgen.ExitFail {
				t.Errorf("exit code %d, want %d", code, loadgen.ExitFail)
			}
			r := readResult(t, out)
			if !r.Aborted || !strings.Contains(r.Error, addr) {
				t.Errorf("aborted %v error %q, want an aborted run naming %s", r.Aborted, r.Error, addr)
			}
			if r.Requests == 0 || r.DurationS >= 20 {
				t.Errorf("requests %d over %.1f s, want the partial results up to the loss", r.Requests, r.DurationS)
			}
		})
	}
}
