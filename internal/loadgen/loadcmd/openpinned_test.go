package loadcmd

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"testing"

	"github.com/protobench/protobench/internal/loadgen"
	"github.com/protobench/protobench/internal/repo"
)

// TestOpenModelPinnedMatchesClosed is TestOpenModelMatchesClosedAtLowLoad where issue 36 found the
// HTTP/1.1 fault: the REST server a process of its own on one core, the generator the protobench
// binary on another. Pinned so, the former open-model path (a goroutine per connection, tickets
// from a pacer thread: --http-client std) reported p50 ≈ connections ÷ rate (10 ms over 10
// connections at 1,000/s, 100 ms over 100) where the closed model reported 0.4 ms; in one
// process, or unpinned, it did not show.
//
// Both cases here put connections ÷ rate at 100 ms, so the fault lands ten times past the bound
// of two closed medians plus 10 ms (best of three). A tighter bound measured the machine rather
// than the fault: CI's 2-vCPU VM served the open model's requests in 1.7 ms at p50 (the server's
// own service time, as the client saw it) against 0.18 ms closed, and failed a 2 ms margin with
// an open p50 of 2.7 ms. It needs the two cores to itself: `go test -race ./...` runs other
// packages' tests on them at the same time, so it runs in run.sh's non-race line, alone.
func TestOpenModelPinnedMatchesClosed(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the CLI and a server")
	}
	if raceEnabled {
		t.Skip("needs both cores to itself; run.sh test runs it without -race, after the parallel packages")
	}
	if runtime.NumCPU() < 2 {
		t.Skip("needs two CPUs: one for the server, one for the generator")
	}
	taskset, err := exec.LookPath("taskset")
	if err != nil {
		t.Skip("needs taskset (util-linux) to pin the processes")
	}
	server := buildServer(t, "rest")
	cli := buildCLI(t)
	cmd, addr := startServerProcess(t, server)
	if out, err := exec.Command(taskset, "-a", "-c", "-p", "0", strconv.Itoa(cmd.Process.Pid)).CombinedOutput(); err != nil {
		t.Fatalf("pinning the server to CPU 0: %v\n%s", err, out)
	}
	load := func(args ...string) *loadgen.Result {
		t.Helper()
		all := append([]string{"-c", "1", cli, "load", "--target", "http://" + addr, "--method", "GetUser", "--out", "-"}, args...)
		out, err := exec.Command(taskset, all...).Output()
		if err != nil {
			t.Fatalf("protobench load %v: %v", args, err)
		}
		var r loadgen.Result
		if err := json.Unmarshal(out, &r); err != nil {
			t.Fatalf("protobench load %v: %v\n%s", args, err, out)
		}
		if r.Requests == 0 || r.Errors != 0 {
			t.Fatalf("protobench load %v: %d requests, %d errors (%s)", args, r.Requests, r.Errors, r.Error)
		}
		return &r
	}
	closed := load("--connections", "1", "--concurrency", "1", "--duration", "1s", "--warmup", "200ms")
	bound := 2*closed.LatencyMs.P50 + 10
	for _, c := range []struct{ rate, conns int }{{100, 10}, {1000, 100}} {
		faultMs := 1000 * c.conns / c.rate
		t.Run(fmt.Sprintf("%d/s over %d connections", c.rate, c.conns), func(t *testing.T) {
			open := bestOf(bound, func() *loadgen.Result {
				return load("--connections", strconv.Itoa(c.conns), "--rate", strconv.Itoa(c.rate), "--duration", "2s", "--warmup", "300ms")
			})
			t.Logf("closed p50 %.3f ms; open p50 %.3f ms (service p50 %.3f, scheduler lag p50 %.3f) over %d requests",
				closed.LatencyMs.P50, open.LatencyMs.P50, open.ServiceTimeMs.P50, open.SchedulerLagMs.P50, open.Requests)
			if open.LatencyMs.P50 > bound {
				t.Errorf("open model p50 %.3f ms, want at most %.3f ms (2 × the closed model's %.3f ms + 10 ms); the fault gives connections ÷ rate, %d ms",
					open.LatencyMs.P50, bound, closed.LatencyMs.P50, faultMs)
			}
		})
	}
}

// buildCLI builds the protobench binary without cgo (the ZeroMQ driver is not needed here).
func buildCLI(t *testing.T) string {
	t.Helper()
	root, err := repo.Root()
	if err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(t.TempDir(), "protobench")
	build := exec.Command("go", "build", "-o", bin, "./cmd/protobench")
	build.Dir = root
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build ./cmd/protobench: %v\n%s", err, out)
	}
	return bin
}
