package tlstest

import (
	"strconv"
	"testing"

	"github.com/protobench/protobench/internal/loadgen/driver/drivertest"
	"github.com/protobench/protobench/internal/servertest"
)

// handshakes is the server's handshake count: all, and the resumed ones.
func handshakes(t *testing.T, metricsAddr string) (all, resumed float64) {
	return servertest.Handshakes(t, metricsAddr)
}

// handshakesByALPN sums the server's handshakes by their alpn label.
func handshakesByALPN(t *testing.T, metricsAddr string) map[string]float64 {
	_, by := servertest.MetricSum(t, metricsAddr, servertest.HandshakesMetric, "alpn")
	return by
}

// failures sums the server's failed handshakes over their reasons.
func failures(t *testing.T, metricsAddr string) float64 {
	sum, _ := servertest.MetricSum(t, metricsAddr, servertest.HandshakeFailuresMetric, "")
	return sum
}

// TestChurnHandshakes drives each TLS server with a fixed count of requests (the open model's
// schedule: 200/s for 1 s, one request in flight) at 10 requests per connection, and checks
// that the server shook hands once per 10 requests, and that without churn (reuse forever) it
// shakes hands about once per connection whatever the count of requests.
func TestChurnHandshakes(t *testing.T) {
	const requests, perConn = 200, 10
	cases := []struct {
		label, server, scheme string
		extra                 []string
		probes                int // handshakes Dial adds to the first connection (gRPC's TLS probe)
	}{
		{"grpc", servertest.GRPC, "grpc", nil, 1},
		{"rest https/1.1", servertest.REST, "http", []string{"--http-version=1.1"}, 0},
		{"rest https/2", servertest.REST, "http", []string{"--http-version=2"}, 0},
		{"connect https/1.1", servertest.Connect, "connect", []string{"--http-version=1.1"}, 0},
		{"connect https/2", servertest.Connect, "connect", []string{"--http-version=2"}, 0},
		{"connect-grpc", servertest.ConnectGRPC, "grpc", nil, 1},
		{"netrpc", servertest.NetRPC, "netrpc", nil, 0},
	}
	for _, c := range cases {
		t.Run(c.label, func(t *testing.T) {
			dir, ca := certs(t)
			ep := servertest.Start(t, c.server, servertest.WithTLS(dir))
			base := append([]string{"--target=" + c.scheme + "://" + ep.Main, "--tls-ca=" + ca, "--tls-server-name=localhost",
				"--warmup=0s", "--progress=off"}, c.extra...)

			before, _ := handshakes(t, ep.Metrics)
			res := drivertest.RunClean(t, true, append(base, "--rate=200", "--duration=1s", "--connections=1", "--concurrency=1",
				"--requests-per-connection="+strconv.Itoa(perConn))...)
			after, resumed := handshakes(t, ep.Metrics)
			// On a quiet machine the schedule's 200 are all sent; on a loaded one (or under -race)
			// the one worker may fall behind and leave the last tickets unsent, and the count
			// is then what was sent.
			if res.Requests < requests*3/4 || res.Requests > requests {
				t.Fatalf("requests %d (unsent %d), want the schedule's %d", res.Requests, res.Unsent, requests)
			}
			if res.RequestsPerConnection != perConn {
				t.Errorf("result requests_per_connection %d, want %d", res.RequestsPerConnection, perConn)
			}
			want := float64((res.Requests+perConn-1)/perConn) + float64(c.probes)
			if got := after - before; got != want {
				t.Errorf("churn: %v handshakes for %d requests at %d per connection, want %v", got, res.Requests, perConn, want)
			}
			t.Logf("churn: %v handshakes, %v of all so far resumed", after-before, resumed)

			// Reuse forever: 2 connections × 2 in flight, one handshake per socket (HTTP/1.1
			// has one per slot) plus the probes, however many requests they carry.
			before = after
			res = drivertest.RunClean(t, true, append(base, "--duration=300ms", "--connections=2", "--concurrency=2")...)
			after, _ = handshakes(t, ep.Metrics)
			if got := after - before; got < 1 || got > float64(4+2*c.probes) || float64(res.Requests) < 10*got {
				t.Errorf("reuse: %v handshakes for %d requests on 2 connections × 2, want about one per connection", got, res.Requests)
			}
		})
	}
}
