//go:build linux

package netloop

import (
	"bytes"
	"context"
	"crypto/tls"
	"errors"
	"io"
	"net"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/protobench/protobench/internal/loadgen"
	"github.com/protobench/protobench/internal/tlscert"
)

// tlsPeer is a crypto/tls server on loopback whose raw TCP bytes are counted.
type tlsPeer struct {
	ln         net.Listener
	conf       *tls.Config
	caFile     string
	sent, recv atomic.Int64
	trickle    atomic.Bool   // write a byte at a time, pausing between them
	served     chan struct{} // closed when a connection's serve and close are done
}

func newTLSPeer(t *testing.T, opts tlscert.Options) *tlsPeer {
	t.Helper()
	dir := t.TempDir()
	if _, err := tlscert.Generate(dir, opts); err != nil {
		t.Fatal(err)
	}
	cert, err := tls.LoadX509KeyPair(filepath.Join(dir, tlscert.CertFile), filepath.Join(dir, tlscert.KeyFile))
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	return &tlsPeer{ln: ln, caFile: filepath.Join(dir, tlscert.CAFile), served: make(chan struct{}),
		conf: &tls.Config{Certificates: []tls.Certificate{cert}, NextProtos: []string{"h2", "http/1.1"}}}
}

// accept serves one connection with serve, over TLS on a counted socket.
func (p *tlsPeer) accept(serve func(*tls.Conn)) {
	go func() {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		tc := tls.Server(&countedConn{Conn: c, peer: p}, p.conf)
		serve(tc)
		tc.Close()
		close(p.served)
	}()
}

type countedConn struct {
	net.Conn
	peer *tlsPeer
}

func (c *countedConn) Read(b []byte) (int, error) {
	n, err := c.Conn.Read(b)
	c.peer.recv.Add(int64(n))
	return n, err
}

func (c *countedConn) Write(b []byte) (int, error) {
	if !c.peer.trickle.Load() {
		n, err := c.Conn.Write(b)
		c.peer.sent.Add(int64(n))
		return n, err
	}
	for i := range b {
		if _, err := c.Conn.Write(b[i : i+1]); err != nil {
			return i, err
		}
		c.peer.sent.Add(1)
		time.Sleep(time.Millisecond)
	}
	return len(b), nil
}

func clientTLS(t *testing.T, caFile string, alpn ...string) *tls.Config {
	t.Helper()
	conf, err := loadgen.ClientTLS(loadgen.TLSOptions{CAFile: caFile, ServerName: "localhost", ALPN: alpn}, "")
	if err != nil {
		t.Fatal(err)
	}
	return conf
}

// readUntil reads until In holds n bytes, as the loop does on each readable event.
func readUntil(ctx context.Context, t *testing.T, c *Conn, n int) {
	t.Helper()
	for c.N < n {
		if err := WaitFD(ctx, c.FD, PollIn); err != nil {
			t.Fatalf("waiting for %d bytes, holding %d: %v", n, c.N, err)
		}
		if err := c.ReadOnce(); err != nil && !IsAgain(err) {
			t.Fatalf("read: %v", err)
		}
	}
}

// A TLS Conn against crypto/tls's server: requests batched in one flush arrive whole, a reply
// larger than a record and one that arrives a byte at a time (a record split across reads) are
// read whole, ALPN is settled, the wire counts the records exactly as the server's socket saw
// them, and the server's close_notify is ErrClosed.
func TestTLSConnAgainstAPeer(t *testing.T) {
	peer := newTLSPeer(t, tlscert.Options{})
	big := bytes.Repeat([]byte("0123456789abcdef"), 5000) // 80,000 bytes: five records at least
	got := make(chan []byte, 1)
	peer.accept(func(tc *tls.Conn) {
		buf := make([]byte, 15)
		if _, err := io.ReadFull(tc, buf); err != nil {
			got <- []byte(err.Error())
			return
		}
		got <- buf
		if _, err := tc.Write(big); err != nil {
			return
		}
		// One small record written a byte at a time beneath TLS: the client sees partial records.
		peer.trickle.Store(true)
		if _, err := tc.Write([]byte("tail")); err != nil {
			return
		}
		time.Sleep(50 * time.Millisecond)
	})
	var wire loadgen.WireBytes
	c := NewConn(&wire)
	c.TLS = clientTLS(t, peer.caFile, "h2")
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := c.Dial(ctx, peer.ln.Addr().String()); err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	st, ok := c.TLSState()
	if !ok || st.NegotiatedProtocol != "h2" || st.Version != tls.VersionTLS13 {
		t.Fatalf("TLS state %v %q %x, want h2 over TLS 1.3", ok, st.NegotiatedProtocol, st.Version)
	}
	for _, req := range []string{"hello", "there", "world"} {
		c.Out = append(c.Out, req...)
	}
	for c.Pending() {
		if err := c.Flush(); err != nil {
			t.Fatal(err)
		}
	}
	if s := string(<-got); s != "hellothereworld" {
		t.Fatalf("the server read %q", s)
	}
	readUntil(ctx, t, c, len(big)+4)
	if !bytes.Equal(c.In[:len(big)], big) || string(c.In[len(big):c.N]) != "tail" {
		t.Fatalf("read %d bytes, not the %d sent", c.N, len(big)+4)
	}
	for {
		if err := WaitFD(ctx, c.FD, PollIn); err != nil {
			t.Fatal(err)
		}
		err := c.ReadOnce()
		if errors.Is(err, ErrClosed) {
			break
		}
		if err != nil && !IsAgain(err) {
			t.Fatalf("read: %v, want ErrClosed at the server's close_notify", err)
		}
	}
	<-peer.served // its close_notify is counted after the byte is written
	if wire.Sent.Load() != peer.recv.Load() || wire.Received.Load() != peer.sent.Load() {
		t.Errorf("counted %d sent, %d received; the server's socket %d received, %d sent",
			wire.Sent.Load(), wire.Received.Load(), peer.recv.Load(), peer.sent.Load())
	}
	if wire.Received.Load() <= int64(len(big)) {
		t.Errorf("received %d bytes on the wire for %d of plaintext: records not counted", wire.Received.Load(), len(big))
	}
}

// A server the run's CA did not sign, or whose certificate has expired, fails the dial with
// x509's reason as a TLSError naming the address, and the socket is closed.
func TestTLSRefusesAnUntrustedServer(t *testing.T) {
	other := newTLSPeer(t, tlscert.Options{})
	past := time.Now().Add(-72 * time.Hour)
	for _, c := range []struct {
		label  string
		peer   *tlsPeer
		caFile string
		reason string
	}{
		{"another CA", newTLSPeer(t, tlscert.Options{}), other.caFile, "unknown authority"},
		{"expired", newTLSPeer(t, tlscert.Options{NotBefore: past, NotAfter: past.Add(time.Hour)}), "", "expired"},
	} {
		t.Run(c.label, func(t *testing.T) {
			if c.caFile == "" {
				c.caFile = c.peer.caFile
			}
			c.peer.accept(func(tc *tls.Conn) { _ = tc.Handshake() })
			conn := NewConn(&loadgen.WireBytes{})
			conn.TLS = clientTLS(t, c.caFile)
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			addr := c.peer.ln.Addr().String()
			err := conn.Dial(ctx, addr)
			var te *loadgen.TLSError
			if !errors.As(err, &te) || te.Address != addr || !strings.Contains(err.Error(), c.reason) {
				t.Fatalf("err %v, want a TLSError naming %s and %q", err, addr, c.reason)
			}
			if conn.FD != -1 {
				t.Error("the socket was left open")
			}
		})
	}
}

// A server that accepts TCP and never answers the ClientHello fails the dial within its context.
func TestTLSHandshakeTimesOut(t *testing.T) {
	addr := silentPeer(t, 2*time.Second)
	conn := NewConn(&loadgen.WireBytes{})
	conn.TLS = clientTLS(t, newTLSPeer(t, tlscert.Options{}).caFile)
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	start := time.Now()
	err := conn.Dial(ctx, addr)
	var te *loadgen.TLSError
	if !errors.As(err, &te) || time.Since(start) > 1500*time.Millisecond {
		t.Fatalf("err %v after %v, want a TLSError when the context ends", err, time.Since(start))
	}
	if conn.FD != -1 {
		t.Error("the socket was left open")
	}
}
