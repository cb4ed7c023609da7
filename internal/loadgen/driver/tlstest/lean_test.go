package tlstest

import (
	"runtime"
	"testing"

	"github.com/protobench/protobench/internal/loadgen/driver/drivertest"
	"github.com/protobench/protobench/internal/servertest"
)

// TestLeanClientsOverTLS: in both models the event-loop clients carry TLS themselves, so a
// run shakes hands once per socket it keeps, no more (no probe of its own, no library client
// dialling beside it), in either TLS version, and settles the ALPN its protocol needs.
func TestLeanClientsOverTLS(t *testing.T) {
	cases := []struct {
		label, server, scheme string
		extra                 []string
		sockets               float64 // 2 connections; HTTP/1.1 keeps one socket per request in flight
		alpn                  string
	}{
		{"grpc", servertest.GRPC, "grpc", nil, 2, "h2"},
		{"rest https/1.1", servertest.REST, "http", []string{"--http-version=1.1"}, 8, "http/1.1"},
		{"rest https/2", servertest.REST, "http", []string{"--http-version=2"}, 2, "h2"},
		{"connect-grpc", servertest.ConnectGRPC, "grpc", nil, 2, "h2"},
		{"netrpc", servertest.NetRPC, "netrpc", nil, 2, ""},
	}
	for _, c := range cases {
		t.Run(c.label, func(t *testing.T) {
			dir, ca := certs(t)
			for _, run := range []struct{ v, rate string }{{"1.3", "0"}, {"1.2", "0"}, {"1.3", "1000"}, {"1.2", "1000"}} {
				v := run.v
				ep := servertest.Start(t, c.server, servertest.WithTLS(dir))
				args := append([]string{"--target=" + c.scheme + "://" + ep.Main, "--tls-ca=" + ca, "--tls-server-name=localhost",
					"--tls-version=" + v, "--connections=2", "--concurrency=4", "--duration=300ms", "--warmup=0s", "--progress=off",
					"--rate=" + run.rate}, c.extra...)
				res := drivertest.RunClean(t, true, args...)
				if run.rate == "0" && res.Requests < 100 {
					t.Errorf("TLS %s rate %s: %d requests in 300 ms", v, run.rate, res.Requests)
				}
				// The event loops are at most GOMAXPROCS goroutines; the library paths one per
				// slot (8), in the open model too.
				if res.Workers > runtime.GOMAXPROCS(0) {
					t.Errorf("TLS %s rate %s: %d goroutines drove the requests, want the event loops (at most %d)", v, run.rate, res.Workers, runtime.GOMAXPROCS(0))
				}
				byALPN := handshakesByALPN(t, ep.Metrics)
				var total float64
				for _, n := range byALPN {
					total += n
				}
				if total != c.sockets || byALPN[c.alpn] != c.sockets {
					t.Errorf("TLS %s: the server counted handshakes %v, want %v with ALPN %q", v, byALPN, c.sockets, c.alpn)
				}
				if failed := failures(t, ep.Metrics); failed != 0 {
					t.Errorf("TLS %s: %v failed handshakes", v, failed)
				}
			}
		})
	}
}
