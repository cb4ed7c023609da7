package servertest_test

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/rpc"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"connectrpc.com/connect"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"

	"github.com/protobench/protobench/internal/contract/benchpb"
	"github.com/protobench/protobench/internal/contract/benchpb/benchpbconnect"
	"github.com/protobench/protobench/internal/servertest"
	"github.com/protobench/protobench/internal/targets"
	"github.com/protobench/protobench/internal/tlscert"
)

// TLS on every server that has it, from the registry: a verified client is served, the handshake
// the server recorded is the one the client saw, and hostile clients (garbage instead of a
// ClientHello, a handshake that stops, a client that does not trust the certificate) fail with
// a clear error on their side, are counted by the server, and leave it serving.

// tlsTestTimeout is the servers' handshake timeout here, short so the stalled client is cut off
// within the test.
const tlsTestTimeout = time.Second

func makeCerts(t *testing.T, opts tlscert.Options) (string, *x509.CertPool) {
	t.Helper()
	dir := t.TempDir()
	if _, err := tlscert.Generate(dir, opts); err != nil {
		t.Fatal(err)
	}
	pem, err := os.ReadFile(filepath.Join(dir, tlscert.CAFile))
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(pem)
	return dir, pool
}

func tlsTargets() []targets.Target {
	var out []targets.Target
	for _, tg := range targets.All() {
		if tg.TLS != nil {
			out = append(out, tg)
		}
	}
	return out
}

// callOverTLS makes one GetUser call with the protocol's own client over TLS and returns its error.
func callOverTLS(ctx context.Context, name, addr string, conf *tls.Config) error {
	switch name {
	case servertest.GRPC, servertest.PythonGRPC, servertest.ConnectGRPC:
		cc, err := grpc.NewClient(addr, grpc.WithTransportCredentials(credentials.NewTLS(conf)))
		if err != nil {
			return err
		}
		defer cc.Close()
		_, err = benchpb.NewBenchClient(cc).GetUser(ctx, &benchpb.GetUserRequest{Id: 7}, grpc.WaitForReady(false))
		return err
	case servertest.REST:
		for _, h2 := range []bool{false, true} {
			var p http.Protocols
			p.SetHTTP1(!h2)
			p.SetHTTP2(h2)
			tc := conf.Clone()
			tc.NextProtos = []string{"http/1.1"}
			if h2 {
				tc.NextProtos = []string{"h2"}
			}
			tr := &http.Transport{TLSClientConfig: tc, Protocols: &p, ForceAttemptHTTP2: h2}
			c := &restClient{base: "https://" + addr, hc: &http.Client{Transport: tr}}
			_, err := c.GetUser(ctx, 7)
			tr.CloseIdleConnections()
			if err != nil {
				return err
			}
		}
		return nil
	case servertest.Connect:
		return connectOverTLS(ctx, addr, conf)
	case servertest.NetRPC:
		d := &tls.Dialer{Config: conf}
		nc, err := d.DialContext(ctx, "tcp", addr)
		if err != nil {
			return err
		}
		c := &netrpcClient{c: rpc.NewClient(nc)}
		defer c.Close()
		_, err = c.GetUser(ctx, 7)
		return err
	}
	return errors.New("no TLS client for " + name)
}

// connectOverTLS calls GetUser through connect-go's client in every wire connect-go's server
// answers over TLS: the Connect protocol (protobuf and JSON) over HTTPS/1.1 and HTTPS/2, and
// gRPC-Web over HTTPS/2, each on a client that offers that one ALPN protocol. A call that
// arrived over another HTTP version than the one asked for is an error, so a transport that
// quietly fell back cannot pass for the other.
func connectOverTLS(ctx context.Context, addr string, conf *tls.Config) error {
	for _, v := range []connectVariant{{"connect", false, false}, {"connect", true, false}, {"connect", false, true}, {"connect", true, true}, {"grpc-web", false, true}} {
		var p http.Protocols
		p.SetHTTP1(!v.h2c)
		p.SetHTTP2(v.h2c)
		tc := conf.Clone()
		want := "HTTP/1.1"
		tc.NextProtos = []string{"http/1.1"}
		if v.h2c {
			tc.NextProtos, want = []string{"h2"}, "HTTP/2.0"
		}
		tr := &http.Transport{TLSClientConfig: tc, Protocols: &p, ForceAttemptHTTP2: v.h2c, DisableCompression: true}
		seen := &protoRecorder{next: tr}
		c := benchpbconnect.NewBenchClient(&http.Client{Transport: seen}, "https://"+addr, v.options()...)
		r, err := c.GetUser(ctx, connect.NewRequest(&benchpb.GetUserRequest{Id: 7}))
		tr.CloseIdleConnections()
		if err != nil {
			return fmt.Errorf("%s over TLS: %w", v, err)
		}
		if seen.proto != want {
			return fmt.Errorf("%s over TLS: the call went over %s, want %s", v, seen.proto, want)
		}
		if r.Msg.GetId() != 7 {
			return fmt.Errorf("%s over TLS: GetUser(7) returned id %d", v, r.Msg.GetId())
		}
	}
	return nil
}

// protoRecorder notes the HTTP version of the last response its transport returned.
type protoRecorder struct {
	next  http.RoundTripper
	proto string
}

func (p *protoRecorder) RoundTrip(r *http.Request) (*http.Response, error) {
	resp, err := p.next.RoundTrip(r)
	if err == nil {
		p.proto = resp.Proto
	}
	return resp, err
}

func clientConf(pool *x509.CertPool, tg targets.Target) *tls.Config {
	return &tls.Config{RootCAs: pool, ServerName: "localhost", NextProtos: tg.TLS.ALPN}
}

func startTLS(t *testing.T, name, dir string) servertest.Endpoints {
	return servertest.Start(t, name, servertest.WithTLS(dir),
		servertest.WithKnob("PROTOBENCH_TLS_HANDSHAKE_TIMEOUT", tlsTestTimeout.String()))
}

// goTLS reports whether the server's TLS is serverkit's, which counts handshakes on /metrics
// (gRPC core's TLS in the Python server does not expose its handshakes).
func goTLS(tg targets.Target) bool { return tg.GoServer != "" }

func TestTLSServesAndRecordsTheHandshake(t *testing.T) {
	for _, tg := range tlsTargets() {
		t.Run(tg.Name, func(t *testing.T) {
			t.Parallel()
			dir, pool := makeCerts(t, tlscert.Options{})
			ep := startTLS(t, tg.Name, dir)
			ctx, cancel := context.WithTimeout(context.Background(), giveUp)
			defer cancel()
			if err := callOverTLS(ctx, tg.Name, ep.Main, clientConf(pool, tg)); err != nil {
				t.Fatalf("GetUser over TLS: %v", err)
			}
			// Resumption: a client that keeps its session cache resumes on its next connections.
			conf := clientConf(pool, tg)
			conf.ClientSessionCache = tls.NewLRUClientSessionCache(4)
			resumed := 0
			const conns = 17
			for i := 0; i < conns; i++ {
				c, err := tls.Dial("tcp", ep.Main, conf)
				if err != nil {
					t.Fatalf("connection %d: %v", i, err)
				}
				// TLS 1.3 tickets arrive after the handshake: read until they have.
				c.SetReadDeadline(time.Now().Add(50 * time.Millisecond))
				c.Read(make([]byte, 1))
				st := c.ConnectionState()
				if st.DidResume {
					resumed++
				}
				if i == 0 && len(tg.TLS.ALPN) > 0 && st.NegotiatedProtocol != tg.TLS.ALPN[0] {
					t.Errorf("ALPN %q, want %q", st.NegotiatedProtocol, tg.TLS.ALPN[0])
				}
				c.Close()
			}
			if !goTLS(tg) {
				return
			}
			if resumed == 0 {
				t.Errorf("none of %d connections with a session cache resumed", conns)
			}
			waitFor(t, "handshake counters", func() (bool, string) {
				s := scrape(t, ep.Metrics)
				full := value(s, "protobench_tls_handshakes_total", map[string]string{"version": "TLS 1.3", "resumed": "false"})
				res := value(s, "protobench_tls_handshakes_total", map[string]string{"version": "TLS 1.3", "resumed": "true"})
				samples := value(s, "protobench_tls_handshake_cpu_samples_total", nil)
				cpu := value(s, "protobench_tls_handshake_cpu_seconds_total", nil)
				ok := full >= 2 && res == float64(resumed) && samples >= 1 && cpu > 0
				return ok, strings.Join([]string{"full", ftoa(full), "resumed", ftoa(res), "want", ftoa(float64(resumed)), "cpu samples", ftoa(samples), "cpu s", ftoa(cpu)}, " ")
			})
			s := scrape(t, ep.Metrics)
			for _, want := range []map[string]string{{"cipher": "TLS_AES_128_GCM_SHA256"}, {"curve": "X25519MLKEM768"}} {
				if value(s, "protobench_tls_handshakes_total", want) < 1 {
					t.Errorf("no handshake recorded with %v", want)
				}
			}
		})
	}
}

func ftoa(f float64) string { return strings.TrimRight(strings.TrimRight(strconvF(f), "0"), ".") }

func strconvF(f float64) string { return fmtFloat(f) }

func TestTLSHostileClients(t *testing.T) {
	for _, tg := range tlsTargets() {
		t.Run(tg.Name, func(t *testing.T) {
			t.Parallel()
			dir, pool := makeCerts(t, tlscert.Options{})
			ep := startTLS(t, tg.Name, dir)
			ctx, cancel := context.WithTimeout(context.Background(), giveUp)
			defer cancel()
			serving := func(after string) {
				t.Helper()
				if err := callOverTLS(ctx, tg.Name, ep.Main, clientConf(pool, tg)); err != nil {
					t.Fatalf("after %s the server no longer serves: %v", after, err)
				}
			}

			// 1. Garbage instead of a ClientHello: a cleartext HTTP request to the TLS port.
			got := rawRoundTrip(t, ep.Main, []byte("GET /users/1 HTTP/1.1\r\nHost: x\r\n\r\n"), nil)
			if goTLS(tg) && !strings.Contains(got, "HTTP request to an HTTPS server") && !strings.HasPrefix(got, "\x15") {
				t.Errorf("a cleartext client got %q: want a 400 that says it spoke HTTP to a TLS port, or a TLS alert", got)
			}
			serving("garbage")

			// 2. A handshake that stops: a record header announcing a ClientHello that never comes.
			stalled, err := net.Dial("tcp", ep.Main)
			if err != nil {
				t.Fatal(err)
			}
			defer stalled.Close()
			stalled.Write([]byte{0x16, 0x03, 0x01, 0x02, 0x00, 0x01})
			serving("a stalled handshake (still open)")
			stalled.SetReadDeadline(time.Now().Add(giveUp))
			if _, err := stalled.Read(make([]byte, 64)); err == nil {
				// An alert is fine; then the close must follow.
				_, err = stalled.Read(make([]byte, 64))
				if err == nil {
					t.Error("the server kept a stalled handshake open")
				}
			} else if errors.Is(err, os.ErrDeadlineExceeded) {
				t.Errorf("the server kept a stalled handshake open for %s", giveUp)
			}

			// 3. A client that does not trust the server: another CA.
			_, otherPool := makeCerts(t, tlscert.Options{})
			err = callOverTLS(ctx, tg.Name, ep.Main, clientConf(otherPool, tg))
			if err == nil || !strings.Contains(err.Error(), "certificate signed by unknown authority") {
				t.Errorf("a client with another CA: %v; want x509's unknown-authority error", err)
			}
			serving("a client with another CA")

			if goTLS(tg) {
				waitFor(t, "failure counters", func() (bool, string) {
					s := scrape(t, ep.Metrics)
					var parts []string
					ok := true
					for _, r := range []string{"not_tls", "timeout", "client_alert"} {
						v := value(s, "protobench_tls_handshake_failures_total", map[string]string{"reason": r})
						parts = append(parts, r+"="+ftoa(v))
						ok = ok && v >= 1
					}
					return ok, strings.Join(parts, " ")
				})
			}
		})
	}
}

// TestTLSExpiredCertificate: a server whose certificate has expired is refused by a verifying
// client with x509's expiry error, and serves clients that accept it (the server keeps running).
func TestTLSExpiredCertificate(t *testing.T) {
	for _, tg := range tlsTargets() {
		t.Run(tg.Name, func(t *testing.T) {
			t.Parallel()
			past := time.Now().Add(-72 * time.Hour)
			dir, pool := makeCerts(t, tlscert.Options{NotBefore: past, NotAfter: past.Add(time.Hour)})
			ep := startTLS(t, tg.Name, dir)
			ctx, cancel := context.WithTimeout(context.Background(), giveUp)
			defer cancel()
			err := callOverTLS(ctx, tg.Name, ep.Main, clientConf(pool, tg))
			if err == nil || !strings.Contains(err.Error(), "expired") {
				t.Errorf("an expired certificate: %v; want x509's expiry error", err)
			}
			conf := clientConf(pool, tg)
			// The test's own check that the server still serves: verify everything but the time.
			conf.Time = func() time.Time { return past.Add(30 * time.Minute) }
			if err := callOverTLS(ctx, tg.Name, ep.Main, conf); err != nil {
				t.Errorf("after the refused client the server no longer serves: %v", err)
			}
		})
	}
}

// rawRoundTrip writes b on a fresh TCP connection and returns what comes back before the server
// closes or a second passes.
func rawRoundTrip(t *testing.T, addr string, b []byte, _ any) string {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.Write(b)
	c.SetReadDeadline(time.Now().Add(time.Second))
	var out []byte
	buf := make([]byte, 512)
	for {
		n, err := c.Read(buf)
		out = append(out, buf[:n]...)
		if err != nil {
			return string(out)
		}
	}
}

func fmtFloat(f float64) string { return strconv.FormatFloat(f, 'f', 6, 64) }
