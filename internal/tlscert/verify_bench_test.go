package tlscert

import (
	"crypto/tls"
	"crypto/x509"
	"os"
	"path/filepath"
	"testing"
)

// BenchmarkClientVerifiesTheChain is what a client pays, on every full handshake, to parse and
// verify the certificate a run's servers present against the run's CA (docs/not-done.md: the
// share of a churning client's cost that a verification cache could save). Run it on one core:
//
//	GOMAXPROCS=1 taskset -c 1 go test -run '^$' -bench ClientVerifiesTheChain ./internal/tlscert
func BenchmarkClientVerifiesTheChain(b *testing.B) {
	dir := b.TempDir()
	if _, err := Generate(dir, Options{Hosts: []string{"localhost"}}); err != nil {
		b.Fatal(err)
	}
	pair, err := tls.LoadX509KeyPair(filepath.Join(dir, CertFile), filepath.Join(dir, KeyFile))
	if err != nil {
		b.Fatal(err)
	}
	ca, err := os.ReadFile(filepath.Join(dir, CAFile))
	if err != nil {
		b.Fatal(err)
	}
	roots := x509.NewCertPool()
	if !roots.AppendCertsFromPEM(ca) {
		b.Fatal("no CA certificate")
	}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		leaf, err := x509.ParseCertificate(pair.Certificate[0])
		if err != nil {
			b.Fatal(err)
		}
		if _, err := leaf.Verify(x509.VerifyOptions{Roots: roots, DNSName: "localhost"}); err != nil {
			b.Fatal(err)
		}
	}
}
