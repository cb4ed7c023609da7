package tlstest

import (
	"crypto/tls"
	"io"
	"net"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/protobench/protobench/internal/loadgen/driver/drivertest"
	"github.com/protobench/protobench/internal/servertest"
	"github.com/protobench/protobench/internal/tlscert"
)

// TestChurnHandshakeNeverBlocksTheLoop: one event loop (GOMAXPROCS 1) churns two HTTPS/1.1
// connections at N = 1 through a TLS relay that holds every ClientHello until the next
// handshake arrives. A loop that waited for its handshake could start no other, so each would
// wait alone until the relay gave up; the loop that steps its handshakes goes on serving the
// other connection, whose next handshake releases this one. Every handshake finds a partner
// but two: the second of the connections dialled before the run (the run starts only when both
// are open, so nothing follows it until the relay gives up) and the last (nothing follows it).
// A loop that blocked would pair only the first.
func TestChurnHandshakeNeverBlocksTheLoop(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
	dir, ca := certs(t)
	backend := servertest.Start(t, servertest.REST)
	relay := newPairingRelay(t, dir, backend.Main)
	res := drivertest.RunClean(t, true, "--target=http://"+relay.addr, "--tls-ca="+ca, "--tls-server-name=localhost",
		"--http-version=1.1", "--connections=2", "--concurrency=1", "--requests-per-connection=1",
		"--duration=500ms", "--warmup=0s", "--progress=off")
	if res.Workers != 1 {
		t.Fatalf("%d goroutines drove the run, want one event loop", res.Workers)
	}
	paired, alone := relay.paired.Load(), relay.alone.Load()
	if alone > 2 || paired < 4 {
		t.Errorf("%d handshakes found a partner and %d waited alone (%d requests): the loop held its handshakes one at a time", paired, alone, res.Requests)
	}
}

// pairingRelay terminates TLS in front of a cleartext server; each handshake waits (up to a
// give-up time) until another one is under way.
type pairingRelay struct {
	addr          string
	mu            sync.Mutex
	arrived       chan struct{} // closed and replaced when a handshake arrives
	paired, alone atomic.Int64
}

func newPairingRelay(t *testing.T, dir, target string) *pairingRelay {
	r := &pairingRelay{arrived: make(chan struct{})}
	r.addr = tlsRelay(t, dir, target, r.await)
	return r
}

// tlsRelay terminates TLS in front of a cleartext server at target, calling hello on each
// ClientHello before it answers, and returns its address.
func tlsRelay(t *testing.T, dir, target string, hello func()) string {
	t.Helper()
	cert, err := tls.LoadX509KeyPair(filepath.Join(dir, tlscert.CertFile), filepath.Join(dir, tlscert.KeyFile))
	if err != nil {
		t.Fatal(err)
	}
	conf := &tls.Config{Certificates: []tls.Certificate{cert}, NextProtos: []string{"http/1.1"},
		GetConfigForClient: func(*tls.ClientHelloInfo) (*tls.Config, error) { hello(); return nil, nil }}
	ln, err := tls.Listen("tcp", "127.0.0.1:0", conf)
	if err != nil {
		t.Fatal(err)
	}
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
			wg.Add(1)
			go func() {
				defer wg.Done()
				defer c.Close()
				if c.(*tls.Conn).Handshake() != nil {
					return
				}
				s, err := net.Dial("tcp", target)
				if err != nil {
					return
				}
				defer s.Close()
				go func() { _, _ = io.Copy(s, c); s.Close() }()
				_, _ = io.Copy(c, s)
			}()
		}
	}()
	return ln.Addr().String()
}

// TestChurnHandshakeTimesOut: a server that stops answering ClientHellos after the first
// connection fails the churning run within the connect timeout, naming the TLS handshake, as a
// failed reconnect does on the library paths.
func TestChurnHandshakeTimesOut(t *testing.T) {
	dir, ca := certs(t)
	backend := servertest.Start(t, servertest.REST)
	var hellos atomic.Int64
	silent := make(chan struct{})
	addr := tlsRelay(t, dir, backend.Main, func() {
		if hellos.Add(1) > 1 {
			<-silent
		}
	})
	t.Cleanup(func() { close(silent) }) // before the relay's own clean-up, which waits for it
	res := drivertest.Run(t, "--target=http://"+addr, "--tls-ca="+ca, "--tls-server-name=localhost", "--http-version=1.1",
		"--connections=1", "--concurrency=1", "--requests-per-connection=1", "--duration=5s", "--warmup=0s",
		"--progress=off", "--connect-timeout=300ms")
	if !res.Aborted || res.Requests != 1 || !strings.Contains(res.Error, "TLS handshake") || !strings.Contains(res.Error, "connect timeout of 300ms") {
		t.Errorf("aborted %v, %d requests, error %q: want the run ended after its first request by the silent handshake", res.Aborted, res.Requests, res.Error)
	}
}

// await returns once the next handshake has arrived, or after a give-up time far beyond a
// handshake on loopback.
func (r *pairingRelay) await() {
	r.mu.Lock()
	close(r.arrived) // the one before found its partner
	mine := make(chan struct{})
	r.arrived = mine
	r.mu.Unlock()
	select {
	case <-mine:
		r.paired.Add(1)
	case <-time.After(time.Second):
		r.alone.Add(1)
	}
}
