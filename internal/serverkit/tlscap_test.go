package serverkit

import (
	"crypto/tls"
	"crypto/x509"
	"net"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"

	"github.com/protobench/protobench/internal/tlscert"
)

// countingListener counts the connections the TLS listener took from the kernel.
type countingListener struct {
	net.Listener
	accepted atomic.Int64
}

func (c *countingListener) Accept() (net.Conn, error) {
	conn, err := c.Listener.Accept()
	if err == nil {
		c.accepted.Add(1)
	}
	return conn, err
}

// TestTLSHandshakesInProgressAreCapped opens three times the cap of silent connections (TCP,
// then never a ClientHello): the server takes only the cap's worth from the backlog, and a
// real client is served once the silent ones go. Without the cap every silent connection would
// hold a handshake goroutine until its time-out.
func TestTLSHandshakesInProgressAreCapped(t *testing.T) {
	const capN = 4
	dir := t.TempDir()
	if _, err := tlscert.Generate(dir, tlscert.Options{}); err != nil {
		t.Fatal(err)
	}
	inner, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	cl := &countingListener{Listener: inner}
	m := NewMetrics("test")
	l, err := newTLSListener(cl, TLSConfig{CertFile: filepath.Join(dir, tlscert.CertFile), KeyFile: filepath.Join(dir, tlscert.KeyFile),
		HandshakeTimeout: time.Minute, MaxHandshakes: capN}, m)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			go func() { c.Write([]byte("ok")); c.Close() }()
		}
	}()
	var silent []net.Conn
	for range 3 * capN {
		c, err := net.Dial("tcp", l.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		silent = append(silent, c)
	}
	defer func() {
		for _, c := range silent {
			c.Close()
		}
	}()
	inProgress := m.tlsMetrics().inProgress
	// Watch for a while: the count must reach the cap and never pass it.
	reached := false
	for end := time.Now().Add(2 * time.Second); time.Now().Before(end); time.Sleep(10 * time.Millisecond) {
		n, g := cl.accepted.Load(), gaugeValue(t, inProgress)
		if n > capN || g > capN {
			t.Fatalf("%d connections accepted, %v handshakes in progress: the cap is %d", n, g, capN)
		}
		reached = reached || g == capN
	}
	if !reached {
		t.Fatalf("handshakes in progress never reached the cap %d (last %v)", capN, gaugeValue(t, inProgress))
	}
	for _, c := range silent {
		c.Close()
	}
	silent = nil
	pool := x509.NewCertPool()
	ca, err := os.ReadFile(filepath.Join(dir, tlscert.CAFile))
	if err != nil {
		t.Fatal(err)
	}
	pool.AppendCertsFromPEM(ca)
	c, err := tls.DialWithDialer(&net.Dialer{Timeout: 30 * time.Second}, "tcp", l.Addr().String(), &tls.Config{RootCAs: pool, ServerName: "localhost"})
	if err != nil {
		t.Fatalf("a real client after the silent ones left: %v", err)
	}
	defer c.Close()
	buf := make([]byte, 2)
	c.SetReadDeadline(time.Now().Add(30 * time.Second))
	if _, err := c.Read(buf); err != nil || string(buf) != "ok" {
		t.Fatalf("served %q, %v", buf, err)
	}
}

func gaugeValue(t *testing.T, g prometheus.Gauge) float64 {
	t.Helper()
	var m dto.Metric
	if err := g.Write(&m); err != nil {
		t.Fatal(err)
	}
	return m.GetGauge().GetValue()
}
