package tlstest

import (
	"fmt"
	"io"
	"net"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/protobench/protobench/internal/loadgen"
	"github.com/protobench/protobench/internal/loadgen/driver/drivertest"
	"github.com/protobench/protobench/internal/servertest"
)

// TestChurnOnTheEventLoops drives every protocol that churns in the closed model, where the
// event loops churn (netloop/churn.go): cleartext, and TLS 1.3 and 1.2 with and without
// resumption. One connection with one request in flight makes the count exact: the run opens
// ⌈requests / N⌉ connections, no more (no probe, no library client beside it), but for one
// whose request the run's end left incomplete. Over TLS the
// server's own handshake counter says so, and with resumption every handshake but the first
// resumed (the session ticket of each connection serves the next); without it none did. In
// cleartext a counting TCP relay in front of the server counts the connections.
func TestChurnOnTheEventLoops(t *testing.T) {
	cases := []struct {
		label, server, scheme string
		extra                 []string
		uncounted             bool // gRPC core counts no handshakes: the TLS runs need only be clean
	}{
		{"grpc", servertest.GRPC, "grpc", nil, false},
		{"rest http/1.1", servertest.REST, "http", []string{"--http-version=1.1"}, false},
		{"rest http/2", servertest.REST, "http", []string{"--http-version=2"}, false},
		{"connect http/1.1", servertest.Connect, "connect", []string{"--http-version=1.1"}, false},
		{"connect http/2", servertest.Connect, "connect", []string{"--http-version=2"}, false},
		{"connect-grpc", servertest.ConnectGRPC, "grpc", nil, false},
		{"netrpc", servertest.NetRPC, "netrpc", nil, false},
		{"python-grpc", servertest.PythonGRPC, "grpc", nil, true},
	}
	for _, c := range cases {
		t.Run(c.label, func(t *testing.T) {
			run := func(addr string, perConn int, extra ...string) *loadgen.Result {
				args := append([]string{"--target=" + c.scheme + "://" + addr, "--connections=1", "--concurrency=1",
					"--duration=300ms", "--warmup=0s", "--progress=off", "--requests-per-connection=" + strconv.Itoa(perConn)}, c.extra...)
				return drivertest.RunClean(t, true, append(args, extra...)...)
			}
			// A run opens ⌈requests / N⌉ connections, and perhaps one more for a request that was
			// still waiting for its new connection when the run ended (counted incomplete).
			check := func(label string, got float64, res *loadgen.Result, perConn int) {
				t.Helper()
				want := float64((res.Requests + int64(perConn) - 1) / int64(perConn))
				if got < want || got > want+float64(res.Incomplete) {
					t.Errorf("%s, N = %d: %v connections for %d requests (%d incomplete), want %v", label, perConn, got, res.Requests, res.Incomplete, want)
				}
			}

			clear := servertest.Start(t, c.server)
			for _, n := range []int{1, 3} {
				relay := newCountingRelay(t, clear.Main) // one per run: a late accept counts in its own run
				res := run(relay.addr, n)
				check("cleartext", float64(relay.accepted.Load()), res, n)
			}

			dir, ca := certs(t)
			ep := servertest.Start(t, c.server, servertest.WithTLS(dir))
			for _, v := range []string{"1.3", "1.2"} {
				for _, resume := range []bool{true, false} {
					args := []string{"--tls-ca=" + ca, "--tls-server-name=localhost", "--tls-version=" + v, "--tls-resume=" + strconv.FormatBool(resume)}
					if c.uncounted {
						run(ep.Main, 1, args...)
						continue
					}
					all0, resumed0 := handshakes(t, ep.Metrics)
					res := run(ep.Main, 1, args...)
					all, resumed := handshakes(t, ep.Metrics)
					all, resumed = all-all0, resumed-resumed0
					label := fmt.Sprintf("TLS %s, resume %v", v, resume)
					check(label, all, res, 1)
					wantResumed := 0.0
					if resume {
						wantResumed = all - 1 // the first connection has no session to resume
					}
					if resumed != wantResumed {
						t.Errorf("%s: %v of %v handshakes resumed, want %v", label, resumed, all, wantResumed)
					}
				}
			}
			if failed := failures(t, ep.Metrics); !c.uncounted && failed != 0 {
				t.Errorf("the server counted %v failed handshakes", failed)
			}
		})
	}
}

// countingRelay is a TCP relay in front of a server that counts the connections it accepts.
type countingRelay struct {
	addr     string
	accepted atomic.Int64
}

func newCountingRelay(t *testing.T, target string) *countingRelay {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	r := &countingRelay{addr: ln.Addr().String()}
	var wg sync.WaitGroup
	t.Cleanup(func() { ln.Close(); wg.Wait() })
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			r.accepted.Add(1)
			s, err := net.Dial("tcp", target)
			if err != nil {
				c.Close()
				continue
			}
			wg.Add(2)
			pipe := func(dst, src net.Conn) {
				defer wg.Done()
				_, _ = io.Copy(dst, src)
				dst.Close()
				src.Close()
			}
			go pipe(s, c)
			go pipe(c, s)
		}
	}()
	return r
}

// TestChurnLeavesNoTimeWait: connections the event loops churn close with RST, so neither side
// keeps them in TIME_WAIT (which would hold a client port for 60 s; docs/tls.md). Only the last
// connection of each slot, which the run closes as usual at its end, may wait there.
func TestChurnLeavesNoTimeWait(t *testing.T) {
	ep := servertest.Start(t, servertest.REST)
	const slots = 4
	res := drivertest.RunClean(t, true, "--target=http://"+ep.Main, "--http-version=1.1", "--connections="+strconv.Itoa(slots),
		"--concurrency=1", "--requests-per-connection=1", "--duration=300ms", "--warmup=0s", "--progress=off")
	waiting := timeWaitTo(t, ep.Main)
	if res.Requests < 4*slots || waiting > slots {
		t.Errorf("%d connections opened and closed, %d of them in TIME_WAIT: want at most the %d closed at the end", res.Requests, waiting, slots)
	}
}

// timeWaitTo counts the sockets in TIME_WAIT (state 06 of /proc/net/tcp) whose peer is addr, an
// IPv4 loopback address: the client's ends of the connections to a server there.
func timeWaitTo(t *testing.T, addr string) int {
	t.Helper()
	host, port, err := net.SplitHostPort(addr)
	if err != nil || host != "127.0.0.1" {
		t.Fatalf("%s: want 127.0.0.1:port", addr)
	}
	p, _ := strconv.Atoi(port)
	peer := fmt.Sprintf("0100007F:%04X", p)
	data, err := os.ReadFile("/proc/net/tcp")
	if err != nil {
		t.Skip("no /proc/net/tcp: ", err)
	}
	n := 0
	for _, line := range strings.Split(string(data), "\n") {
		f := strings.Fields(line)
		if len(f) > 3 && f[2] == peer && f[3] == "06" {
			n++
		}
	}
	return n
}
