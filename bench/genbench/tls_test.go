package genbench

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/protobench/protobench/internal/loadgen/loadcmd"
	"github.com/protobench/protobench/internal/server/grpcserver"
	"github.com/protobench/protobench/internal/server/restserver"
	"github.com/protobench/protobench/internal/serverkit"
	"github.com/protobench/protobench/internal/tlscert"
	"github.com/protobench/protobench/internal/tool"
)

// TestMain lets TestTLSRowsForReal run this test binary as the real servers and as our
// generator, under the names the bench gives them (startServer runs <bin>/grpc and <bin>/rest,
// runGenerator <tools[protobench]> load ...), so that a real run builds nothing.
func TestMain(m *testing.M) {
	switch filepath.Base(os.Args[0]) {
	case "grpc":
		serverkit.Main(grpcserver.Spec)
	case "rest":
		serverkit.Main(restserver.Spec)
	case ours:
		if len(os.Args) > 1 && os.Args[1] == "load" {
			os.Exit(loadcmd.Command(context.Background(), os.Args[2:], os.Stdout, os.Stderr))
		}
	}
	os.Exit(m.Run())
}

// TestTLSInvocation: a TLS row trusts the run's CA under the name its certificate holds, and
// the adapters turn that into https:// with the row's HTTP version; cleartext rows stay
// cleartext.
func TestTLSInvocation(t *testing.T) {
	o := defaults(t)
	ca := filepath.Join(tlsDir(), tlscert.CAFile)
	for _, tc := range []struct {
		protocol, gen string
		want, absent  []string
	}{
		{"grpc-tls", "protobench", []string{"--target grpc://", "--tls-ca " + ca, "--tls-server-name localhost"}, []string{"--http-version", "--grpc-client"}},
		{"https", "protobench", []string{"--target http://", "--tls-ca " + ca, "--http-version 1.1"}, nil},
		{"h2", "protobench", []string{"--tls-ca " + ca, "--http-version 2"}, nil},
		{"grpc-tls", "h2load", []string{"https://127.0.0.1:1/protobench.v1.Bench/GetUser", "-c 4 -m 16"}, []string{"--h1"}},
		{"https", "h2load", []string{"https://127.0.0.1:1/v1/users/", "--h1", "-c 64 -m 1"}, nil},
		{"h2", "h2load", []string{"https://127.0.0.1:1/v1/users/", "-c 4 -m 16"}, []string{"--h1"}},
		{"https", "wrk", []string{"https://127.0.0.1:1"}, nil},
		{"h2c", "protobench", []string{"--http-version 2"}, []string{"--tls-ca"}},
		{"http", "h2load", []string{"http://127.0.0.1:1"}, []string{"https://"}},
	} {
		t.Run(tc.protocol+"/"+tc.gen, func(t *testing.T) {
			a, _ := tool.Lookup(generators[tc.gen].tool)
			inv := o.invocation(tc.protocol, "127.0.0.1:1", time.Second, "/raw", "x")
			if got := inv.CAFile != ""; got != protocolSpecs[tc.protocol].tls {
				t.Errorf("CAFile %q on a row whose tls is %v", inv.CAFile, protocolSpecs[tc.protocol].tls)
			}
			args := strings.Join(nativeArgs(a, inv, "/src"), " ")
			for _, w := range tc.want {
				if !strings.Contains(args, w) {
					t.Errorf("%s\nwant %q in it", args, w)
				}
			}
			for _, n := range tc.absent {
				if strings.Contains(args, n) {
					t.Errorf("%s\nwant no %q in it", args, n)
				}
			}
		})
	}
}

// TestTLSServerArgs: each TLS row's server gets the run's certificate and offers the ALPN its
// registry entry declares; cleartext rows get no TLS flag.
func TestTLSServerArgs(t *testing.T) {
	dir := tlsDir()
	cert := "--tls-cert " + filepath.Join(dir, tlscert.CertFile) + " --tls-key " + filepath.Join(dir, tlscert.KeyFile)
	want := map[string]string{
		"grpc-tls": cert + " --tls-alpn h2",
		"https":    cert + " --tls-alpn h2,http/1.1",
		"h2":       cert + " --tls-alpn h2,http/1.1", // the REST server: the client's ALPN picks the version
	}
	alpn := map[string]string{"grpc-tls": "h2", "https": "http/1.1", "h2": "h2"}
	for _, p := range protocolNames {
		spec := protocolSpecs[p]
		var got string
		if spec.extra != nil {
			got = strings.Join(spec.extra([]int{1, 2, 3, 4}), " ")
		}
		switch w, isTLS := want[p]; {
		case isTLS != spec.tls:
			t.Errorf("%s: tls %v, but the test expects %v", p, spec.tls, isTLS)
		case isTLS && got != w:
			t.Errorf("%s: server flags %q, want %q", p, got, w)
		case !isTLS && strings.Contains(got, "--tls"):
			t.Errorf("%s: cleartext row with server flags %q", p, got)
		case isTLS && spec.alpn() != alpn[p]:
			t.Errorf("%s: ALPN %q, want %q", p, spec.alpn(), alpn[p])
		}
	}
	o := defaults(t)
	if !o.anyTLS() {
		t.Error("the default protocols have no TLS row")
	}
	o.protocols = []string{"grpc", "http", "h2c"}
	if o.anyTLS() {
		t.Error("cleartext protocols need a certificate")
	}
}

// metricsPage is a TLS server's /metrics as client_golang writes it (labels sorted), cut down.
const metricsPage = `# HELP protobench_tls_handshake_failures_total TLS handshakes that failed.
# TYPE protobench_tls_handshake_failures_total counter
protobench_tls_handshake_failures_total{reason="eof"} 0
# HELP protobench_tls_handshakes_total Completed TLS handshakes.
# TYPE protobench_tls_handshakes_total counter
protobench_tls_handshakes_total{alpn="h2",cipher="TLS_AES_128_GCM_SHA256",curve="X25519",resumed="false",version="TLS 1.3"} 4
protobench_tls_handshakes_total{alpn="h2",cipher="TLS_AES_128_GCM_SHA256",curve="X25519",resumed="true",version="TLS 1.3"} 3
protobench_tls_handshakes_total{alpn="",cipher="TLS_AES_256_GCM_SHA384",curve="X25519MLKEM768",resumed="false",version="TLS 1.3"} 1
protobench_tls_handshakes_total{alpn="http/1.1",cipher="TLS_AES_128_GCM_SHA256",curve="X25519",resumed="false",version="TLS 1.2"} 0
`

func TestParseHandshakes(t *testing.T) {
	hs, err := parseHandshakes(strings.NewReader(metricsPage))
	if err != nil {
		t.Fatal(err)
	}
	want := []handshake{
		{version: "TLS 1.3", cipher: "TLS_AES_128_GCM_SHA256", curve: "X25519", alpn: "h2", count: 7},
		{version: "TLS 1.3", cipher: "TLS_AES_256_GCM_SHA384", curve: "X25519MLKEM768", alpn: "", count: 1},
	}
	if !slices.Equal(hs, want) {
		t.Errorf("handshakes %+v\nwant %+v", hs, want)
	}
	for _, bad := range []string{
		`protobench_tls_handshakes_total{alpn="h2"} x`,
		`protobench_tls_handshakes_total{alpn="h2} 1`,
		`protobench_tls_handshakes_total{alpn=h2} 1`,
		`protobench_tls_handshakes_total{alpn="h2" 1`,
	} {
		if _, err := parseHandshakes(strings.NewReader(bad)); err == nil {
			t.Errorf("%q: no error", bad)
		}
	}
}

func TestNegotiated(t *testing.T) {
	h2 := handshake{version: "TLS 1.3", cipher: "TLS_AES_128_GCM_SHA256", curve: "X25519", alpn: "h2", count: 4}
	h1 := h2
	h1.alpn = "http/1.1"
	none := h2
	none.alpn = ""
	for _, tc := range []struct {
		name  string
		hs    []handshake
		alpn  string
		want  string // the summary
		fails bool
	}{
		{"h2 on an h2 row", []handshake{h2}, "h2", "TLS 1.3 TLS_AES_128_GCM_SHA256 X25519 h2", false},
		{"http/1.1 on an HTTPS/1.1 row", []handshake{h1}, "http/1.1", "TLS 1.3 TLS_AES_128_GCM_SHA256 X25519 http/1.1", false},
		{"no ALPN is HTTP/1.1", []handshake{none}, "http/1.1", "TLS 1.3 TLS_AES_128_GCM_SHA256 X25519 no ALPN", false},
		{"no ALPN on an h2 row", []handshake{none}, "h2", "", true},
		{"h2 on an HTTPS/1.1 row", []handshake{h1, h2}, "http/1.1", "", true},
		{"no handshake", nil, "h2", "", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := negotiated(tc.hs, tc.alpn)
			switch {
			case tc.fails && err == nil:
				t.Errorf("no error; summary %q", got)
			case !tc.fails && (err != nil || got != tc.want):
				t.Errorf("%q, %v; want %q", got, err, tc.want)
			}
		})
	}
}

func TestTargetText(t *testing.T) {
	for in, want := range map[float64]string{1: "1.0", 1.4: "1.4", 3: "3.0", 0.9: "0.9", TargetVsH2loadTLS: "0.95"} {
		if got := targetText(in); got != want {
			t.Errorf("targetText(%v) = %q, want %q", in, got, want)
		}
	}
}

// TestTLSRowsForReal runs two TLS rows as the bench does, for its shortest run (2 s, no
// warm-up): a certificate made for the run, the real gRPC and REST servers over TLS pinned to
// core 0, our generator and h2load (when installed) on core 1, each checked by the server's
// handshake counter to have negotiated the row's ALPN. The servers and our generator are this
// test binary (TestMain).
func TestTLSRowsForReal(t *testing.T) {
	if testing.Short() {
		t.Skip("a real run of about 10 s")
	}
	if _, err := exec.LookPath("taskset"); err != nil || runtime.NumCPU() < 2 {
		t.Skip("needs taskset (util-linux) and two CPUs")
	}
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	bin := t.TempDir()
	for _, name := range []string{"grpc", "rest", ours} {
		if err := os.Symlink(self, filepath.Join(bin, name)); err != nil {
			t.Fatal(err)
		}
	}
	o := defaults(t)
	o.duration, o.warmup = 2*time.Second, 0
	var stderr bytes.Buffer
	b := &bench{o: o, stdout: &bytes.Buffer{}, stderr: &stderr, binDir: bin, rawDir: t.TempDir(),
		tools: map[string]string{ours: filepath.Join(bin, ours)}}
	gens := []string{ours}
	if p, err := exec.LookPath("h2load"); err == nil {
		b.tools["h2load"] = p
		gens = append(gens, "h2load")
	} else {
		t.Log("h2load not installed (Debian nghttp2-client): our generator only")
	}
	_, remove, err := makeCerts()
	if err != nil {
		t.Fatal(err)
	}
	defer remove()
	for _, p := range []string{"grpc-tls", "https"} {
		for _, g := range gens {
			m := b.measure(context.Background(), p, g)
			if m.err != nil {
				t.Errorf("%s with %s: %v\n%s", p, g, m.err, stderr.String())
				continue
			}
			alpn := " " + protocolSpecs[p].alpn()
			if m.rps <= 0 || !strings.HasPrefix(m.tls, "TLS 1.3 ") || !strings.HasSuffix(m.tls, alpn) || strings.Contains(m.tls, ";") {
				t.Errorf("%s with %s: %.0f req/s, negotiated %q: want requests, TLS 1.3 and%s only", p, g, m.rps, m.tls, alpn)
			}
			t.Logf("%s with %s: %.0f req/s, %s", p, g, m.rps, m.tls)
		}
	}
}
