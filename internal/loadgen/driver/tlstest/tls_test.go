// Package tlstest runs the load generator over TLS against every TLS server: the same drivers,
// the run's kind of certificates, both TLS versions, with and without resumption.
package tlstest

import (
	"path/filepath"
	"strings"
	"testing"

	_ "github.com/protobench/protobench/internal/loadgen/driver/grpc"
	_ "github.com/protobench/protobench/internal/loadgen/driver/http"
	_ "github.com/protobench/protobench/internal/loadgen/driver/netrpc"

	"github.com/protobench/protobench/internal/loadgen/driver/drivertest"
	"github.com/protobench/protobench/internal/servertest"
	"github.com/protobench/protobench/internal/tlscert"
)

func certs(t *testing.T) (dir, ca string) {
	t.Helper()
	dir = t.TempDir()
	if _, err := tlscert.Generate(dir, tlscert.Options{}); err != nil {
		t.Fatal(err)
	}
	return dir, filepath.Join(dir, tlscert.CAFile)
}

func TestGeneratorOverTLS(t *testing.T) {
	cases := []struct {
		label, server, scheme string
		extra                 []string
	}{
		{"grpc", servertest.GRPC, "grpc", nil},
		{"python-grpc", servertest.PythonGRPC, "grpc", nil},
		{"rest https/1.1", servertest.REST, "http", []string{"--http-version=1.1"}},
		{"rest https/2", servertest.REST, "http", []string{"--http-version=2"}},
		{"netrpc", servertest.NetRPC, "netrpc", nil},
	}
	for _, c := range cases {
		t.Run(c.label, func(t *testing.T) {
			dir, ca := certs(t)
			ep := servertest.Start(t, c.server, servertest.WithTLS(dir))
			for _, v := range []string{"1.3", "1.2"} {
				args := append([]string{"--target=" + c.scheme + "://" + ep.Main, "--tls-ca=" + ca, "--tls-server-name=localhost",
					"--tls-version=" + v, "--connections=2", "--concurrency=2", "--duration=300ms", "--warmup=0s", "--progress=off"}, c.extra...)
				drivertest.RunClean(t, true, args...)
			}
		})
	}
}

// TestGeneratorRefusesAnUntrustedServer: a server whose certificate another CA signed fails the
// run with the x509 reason, not a hang or a count of anonymous errors.
func TestGeneratorRefusesAnUntrustedServer(t *testing.T) {
	dir, _ := certs(t)
	_, otherCA := certs(t)
	for _, c := range []struct{ server, scheme string }{{servertest.GRPC, "grpc"}, {servertest.REST, "http"}, {servertest.NetRPC, "netrpc"}} {
		t.Run(c.server, func(t *testing.T) {
			ep := servertest.Start(t, c.server, servertest.WithTLS(dir))
			res := drivertest.Run(t, "--target="+c.scheme+"://"+ep.Main, "--tls-ca="+otherCA, "--tls-server-name=localhost",
				"--connections=1", "--concurrency=1", "--duration=200ms", "--warmup=0s", "--progress=off", "--connect-timeout=2s")
			msg := res.Error + " " + strings.Join(keys(res.ErrorsByCode), " ")
			if res.Requests != 0 && res.Errors == 0 || !strings.Contains(msg, "unknown authority") && !strings.Contains(msg, "tls") {
				t.Errorf("requests %d errors %d error %q codes %v: want the run refused with the x509 reason", res.Requests, res.Errors, res.Error, res.ErrorsByCode)
			}
		})
	}
}

func keys(m map[string]int64) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}
