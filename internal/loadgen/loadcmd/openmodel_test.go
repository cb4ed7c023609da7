package loadcmd

import (
	"fmt"
	"testing"
	"time"

	"github.com/protobench/protobench/internal/contract"
	"github.com/protobench/protobench/internal/loadgen"
	"github.com/protobench/protobench/internal/loadgen/driver/drivertest"
	"github.com/protobench/protobench/internal/record"
	"github.com/protobench/protobench/internal/servertest"
)

// TestOpenModelMatchesClosedAtLowLoad is the test that would have caught both open-model
// faults of issue 36: HTTP/1.1 replies read only when the next request on their connection was
// sent (latency = connections ÷ rate), and gRPC carrying the client's own scheduling lag. A
// server that answers at once, loaded far below its capacity, answers an open-model request as
// fast as a lone closed-model one, so the open model's median must sit near the closed model's.
//
// The closed model's reference runs on the library path (--http-client std, --grpc-client
// grpc-go): the closed event loop waits in epoll_wait holding its processor (a raw system call,
// for the generator's own core), which starves a server in the same process; in 3 of 8 one-
// second runs here it completed no request at all.
//
// A busy machine only ever slows a run down, and the fault is in every run: an open run over the
// bound is tried again, up to three times (bestOf), before the test fails.
//
// The bound is relative, two closed-model medians plus 2 ms; the HTTP/1.1 cases space
// the requests on one connection (connections ÷ rate) at least twice that bound apart, or skip,
// so the first fault cannot pass. Medians, not tails: a shared test machine moves a tail by
// milliseconds, and the median of a thousand requests or more hardly at all.
func TestOpenModelMatchesClosedAtLowLoad(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector slows the in-process server several times over: its medians say nothing about the generator")
	}
	rest := servertest.Start(t, servertest.REST)
	grpc := servertest.Start(t, servertest.GRPC)
	type load struct {
		rate, connections int
	}
	protocols := []struct {
		name    string
		target  []string
		library []string
		loads   []load
	}{
		{"HTTP/1.1", []string{"--target", "http://" + rest.Main}, []string{"--http-client", "std"}, []load{{1000, 10}, {1000, 100}, {200, 10}}},
		{"h2c", []string{"--target", "http://" + rest.Main, "--http-version", "2"}, []string{"--http-client", "std"}, []load{{1000, 10}, {1000, 1}}},
		{"gRPC", []string{"--target", "grpc://" + grpc.Main}, []string{"--grpc-client", "grpc-go"}, []load{{1000, 10}, {1000, 1}}},
	}
	for _, pr := range protocols {
		t.Run(pr.name, func(t *testing.T) {
			closed := drivertest.RunClean(t, true, append([]string{
				"--method", contract.MethodGetUser, "--connections", "1", "--concurrency", "1",
				"--duration", "1s", "--warmup", "200ms",
			}, append(pr.target, pr.library...)...)...)
			bound := 2*closed.LatencyMs.P50 + 2
			for _, l := range pr.loads {
				t.Run(fmt.Sprintf("%d/s over %d connections", l.rate, l.connections), func(t *testing.T) {
					if gap := 1000 * float64(l.connections) / float64(l.rate); gap < 2*bound && pr.name == "HTTP/1.1" {
						t.Skipf("the closed model's median %.3f ms is too slow here for a bound (%.3f ms) below the spacing on a connection (%.1f ms)", closed.LatencyMs.P50, bound, gap)
					}
					open := bestOf(bound, func() *loadgen.Result {
						return drivertest.RunClean(t, true, append([]string{
							"--method", contract.MethodGetUser, "--connections", fmt.Sprint(l.connections),
							"--rate", fmt.Sprint(l.rate), "--duration", "1500ms", "--warmup", "300ms",
						}, pr.target...)...)
					})
					t.Logf("closed p50 %.3f ms; open p50 %.3f ms (service p50 %.3f, scheduler lag p50 %.3f) over %d requests",
						closed.LatencyMs.P50, open.LatencyMs.P50, open.ServiceTimeMs.P50, open.SchedulerLagMs.P50, open.Requests)
					if open.LatencyMs.P50 > bound {
						t.Errorf("open model p50 %.3f ms, want at most %.3f ms (2 × the closed model's %.3f ms + 2 ms); %d connections at %d/s are %s apart on one connection",
							open.LatencyMs.P50, bound, closed.LatencyMs.P50, l.connections, l.rate, time.Duration(float64(time.Second)*float64(l.connections)/float64(l.rate)))
					}
				})
			}
		})
	}
}

// TestOpenModelPoolWaitCountsInLatency: HTTP/1.1 carries one request at a time per connection,
// so the event loop's sockets are a pool. Offered five times what one connection carries at the
// closed model's median round trip (on the library path, as in the test above), requests
// wait for it; the wait must be in their latency (from the intended send time) and in the
// scheduler lag, not hidden in a send time that starts when the connection frees, and the run
// must say it fell behind.
func TestOpenModelPoolWaitCountsInLatency(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector slows the in-process server several times over")
	}
	rest := servertest.Start(t, servertest.REST)
	base := []string{"--target", "http://" + rest.Main, "--method", contract.MethodGetUser, "--connections", "1", "--concurrency", "1"}
	closed := drivertest.RunClean(t, true, append([]string{"--duration", "1s", "--warmup", "200ms", "--http-client", "std"}, base...)...)
	// One connection's rate from its median round trip, which a busy machine moves far less than
	// the throughput of a short run.
	perConn := 1000 / closed.LatencyMs.P50
	rate := int(5*perConn) + 1
	open := drivertest.Run(t, append([]string{"--rate", fmt.Sprint(rate), "--duration", "1s", "--warmup", "0s"}, base...)...)
	if open.Requests == 0 || open.SchedulerLagMs == nil || open.ServiceTimeMs == nil {
		t.Fatalf("open model at %d/s over one connection: %d requests, lag %v (%s)", rate, open.Requests, open.SchedulerLagMs, open.Error)
	}
	t.Logf("one connection carries %.0f/s at the closed model's median; at %d/s: latency p50 %.3f ms, scheduler lag p50 %.3f ms, service p99 %.3f ms, %d requests, %d incomplete, flags %v",
		perConn, rate, open.LatencyMs.P50, open.SchedulerLagMs.P50, open.ServiceTimeMs.P99, open.Requests, open.Incomplete, open.Flags)
	if open.SchedulerLagMs.P50 <= open.ServiceTimeMs.P99 {
		t.Errorf("scheduler lag p50 %.3f ms is not above the service time's p99 %.3f ms: the wait for the one connection is not in the lag", open.SchedulerLagMs.P50, open.ServiceTimeMs.P99)
	}
	// The latency histogram also holds the requests never sent, each up to the end of the run,
	// so it is set beside the service time, not beside the lag of the completed ones.
	if open.LatencyMs.P50 <= open.ServiceTimeMs.P99 {
		t.Errorf("latency p50 %.3f ms is not above the service time's p99 %.3f ms: the wait is not in the latency", open.LatencyMs.P50, open.ServiceTimeMs.P99)
	}
	if !open.HasFlag(record.FlagRateNotMet) {
		t.Errorf("flags %v, want rate-not-met: one connection cannot carry five times its own rate", open.Flags)
	}
}

// attempts is how many times bestOf runs a measurement that stays over its bound.
const attempts = 3

// bestOf runs run until its p50 is within bound, at most attempts times, and returns the run
// with the lowest p50.
func bestOf(bound float64, run func() *loadgen.Result) *loadgen.Result {
	var best *loadgen.Result
	for i := 0; i < attempts; i++ {
		r := run()
		if best == nil || r.LatencyMs.P50 < best.LatencyMs.P50 {
			best = r
		}
		if best.LatencyMs.P50 <= bound {
			break
		}
	}
	return best
}

// TestOpenModelMaxInflightOnTheLoops: --max-inflight caps the event loops' requests in flight;
// a cap below GOMAXPROCS runs fewer loops, so that none is left with no room at all (it would
// hold a ticket it could never send until the drain timeout).
func TestOpenModelMaxInflightOnTheLoops(t *testing.T) {
	rest := servertest.Start(t, servertest.REST)
	res := drivertest.RunClean(t, true, "--target", "http://"+rest.Main, "--method", contract.MethodGetUser,
		"--connections", "8", "--concurrency", "1", "--max-inflight", "1", "--rate", "500", "--duration", "500ms", "--warmup", "0s")
	if res.Workers != 1 {
		t.Errorf("%d event loops for --max-inflight 1, want 1", res.Workers)
	}
}
