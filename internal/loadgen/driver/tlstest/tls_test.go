// Package tlstest runs the load generator over TLS against every TLS server: the same drivers,
// the run's kind of certificates, both TLS versions, with and without resumption.
package tlstest

import (
	"path/filepath"
	"strings"
	"testing"
	"time"

	_ "github.com/protobench/protobench/internal/loadgen/driver/connect"
	_ "github.com/protobench/protobench/internal/loadgen/driver/grpc"
	_ "github.com/protobench/protobench/internal/loadgen/driver/http"
	_ "github.com/protobench/protobench/internal/loadgen/driver/netrpc"

	"github.com/protobench/protobench/internal/loadgen"
	"github.com/protobench/protobench/internal/loadgen/driver/drivertest"
	"github.com/protobench/protobench/internal/servertest"
	"github.com/protobench/protobench/internal/tlscert"
)

func certs(t *testing.T) (dir, ca string) { return servertest.TLSCerts(t, tlscert.Options{}) }

// TestGeneratorOverTLS drives each TLS server in both TLS versions, in both models (closed and
// open: the open model's workers dial on their own path), checks that the server counted no
// failed handshake, and, where its handshake counter says, that every handshake settled the ALPN
// protocol the step's HTTP version asks for, so that a client that fell back to the other fails
// here.
func TestGeneratorOverTLS(t *testing.T) {
	cases := []struct {
		label, server, scheme string
		extra                 []string
		alpn                  string // every handshake's ALPN on the server's counter; "" unchecked
	}{
		{"grpc", servertest.GRPC, "grpc", nil, "h2"},
		{"python-grpc", servertest.PythonGRPC, "grpc", nil, ""}, // gRPC core counts no handshakes
		{"rest https/1.1", servertest.REST, "http", []string{"--http-version=1.1"}, "http/1.1"},
		{"rest https/2", servertest.REST, "http", []string{"--http-version=2"}, "h2"},
		{"connect https/1.1", servertest.Connect, "connect", []string{"--http-version=1.1"}, "http/1.1"},
		{"connect https/2", servertest.Connect, "connect", []string{"--http-version=2"}, "h2"},
		{"connect https/2 json", servertest.Connect, "connect", []string{"--http-version=2", "--encoding=json"}, "h2"},
		{"connect-grpc", servertest.ConnectGRPC, "grpc", nil, "h2"},
		{"netrpc", servertest.NetRPC, "netrpc", nil, ""},
	}
	for _, c := range cases {
		t.Run(c.label, func(t *testing.T) {
			dir, ca := certs(t)
			ep := servertest.Start(t, c.server, servertest.WithTLS(dir))
			for _, v := range []string{"1.3", "1.2"} {
				for _, rate := range []string{"0", "200"} {
					args := append([]string{"--target=" + c.scheme + "://" + ep.Main, "--tls-ca=" + ca, "--tls-server-name=localhost",
						"--tls-version=" + v, "--rate=" + rate, "--connections=2", "--concurrency=2", "--duration=300ms", "--warmup=0s",
						"--progress=off"}, c.extra...)
					drivertest.RunClean(t, true, args...)
				}
			}
			// A clean run aborts no handshake: no bare TCP probe, no connection dropped halfway.
			if failed := failures(t, ep.Metrics); failed != 0 {
				t.Errorf("the server counted %v failed handshakes during clean runs", failed)
			}
			if c.alpn == "" {
				return
			}
			byALPN := handshakesByALPN(t, ep.Metrics)
			if byALPN[c.alpn] == 0 || len(byALPN) != 1 {
				t.Errorf("handshakes by ALPN %v, want all of them %q", byALPN, c.alpn)
			}
		})
	}
}

// TestGeneratorRefusesAnUntrustedServer: a server whose certificate another CA signed, or whose
// certificate has expired, fails the run with x509's reason, not a hang or a count of anonymous
// errors, and the server then serves a client that trusts it.
func TestGeneratorRefusesAnUntrustedServer(t *testing.T) {
	dir, ca := certs(t)
	_, otherCA := certs(t)
	past := time.Now().Add(-72 * time.Hour)
	expiredDir := t.TempDir()
	if _, err := tlscert.Generate(expiredDir, tlscert.Options{NotBefore: past, NotAfter: past.Add(time.Hour)}); err != nil {
		t.Fatal(err)
	}
	expiredCA := filepath.Join(expiredDir, tlscert.CAFile)
	for _, c := range []struct {
		label, server, scheme string
		extra                 []string
	}{
		{"grpc", servertest.GRPC, "grpc", nil},
		{"rest https/1.1", servertest.REST, "http", []string{"--http-version=1.1"}},
		{"rest https/2", servertest.REST, "http", []string{"--http-version=2"}},
		{"connect https/1.1", servertest.Connect, "connect", []string{"--http-version=1.1"}},
		{"connect https/2", servertest.Connect, "connect", []string{"--http-version=2"}},
		{"connect-grpc", servertest.ConnectGRPC, "grpc", nil},
		{"netrpc", servertest.NetRPC, "netrpc", nil},
	} {
		t.Run(c.label, func(t *testing.T) {
			args := func(addr, ca string) []string {
				return append([]string{"--target=" + c.scheme + "://" + addr, "--tls-ca=" + ca, "--tls-server-name=localhost",
					"--connections=1", "--concurrency=1", "--duration=200ms", "--warmup=0s", "--progress=off", "--connect-timeout=2s"}, c.extra...)
			}
			ep := servertest.Start(t, c.server, servertest.WithTLS(dir))
			refused(t, drivertest.Run(t, args(ep.Main, otherCA)...), "certificate signed by unknown authority")
			drivertest.RunClean(t, true, args(ep.Main, ca)...)

			old := servertest.Start(t, c.server, servertest.WithTLS(expiredDir))
			refused(t, drivertest.Run(t, args(old.Main, expiredCA)...), "expired")
		})
	}
}

// refused fails the test unless the run failed, or every request did, with reason in its error.
func refused(t *testing.T, res *loadgen.Result, reason string) {
	t.Helper()
	msg := res.Error + " " + strings.Join(keys(res.ErrorsByCode), " ")
	if res.Requests != 0 && res.Errors != res.Requests || !strings.Contains(msg, reason) {
		t.Errorf("requests %d errors %d error %q codes %v: want the run refused with x509's %q", res.Requests, res.Errors, res.Error, res.ErrorsByCode, reason)
	}
}

func keys(m map[string]int64) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}
