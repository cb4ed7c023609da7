package serverkit

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// TLSConfig is how a server terminates TLS: the certificate and key files (PEM) the runner
// mounts read-only, and the ALPN protocols its registry entry declares (h2 for gRPC; h2 and
// http/1.1 for REST; none for net/rpc). Empty CertFile means cleartext.
type TLSConfig struct {
	CertFile, KeyFile string
	ALPN              []string
	// HandshakeTimeout bounds a handshake, so that a client that stops mid-handshake holds a
	// goroutine and a socket for this long at most.
	HandshakeTimeout time.Duration
	// MaxHandshakes caps the handshakes in progress; 0 means DefaultMaxHandshakes.
	MaxHandshakes int
}

// Enabled reports whether the server serves TLS.
func (c TLSConfig) Enabled() bool { return c.CertFile != "" }

// DefaultHandshakeTimeout bounds a TLS handshake on the server.
const DefaultHandshakeTimeout = 10 * time.Second

// DefaultMaxHandshakes caps the TLS handshakes in progress. Without a cap, clients that connect
// and never finish their handshake each hold a goroutine, a socket and a handshake buffer for
// HandshakeTimeout, as many as they can open. At the cap the server stops accepting until one
// finishes, so further connections wait in the kernel's backlog rather than cost memory; 1,024
// covers the 1,000 connections of the largest scenario opening at once.
const DefaultMaxHandshakes = 1024

// cpuSampleEvery: one handshake in this many is measured on a locked OS thread, which costs a
// thread hand-off when the handshake waits for the client; sampling keeps that off most
// handshakes while still giving a per-handshake CPU figure per run.
const cpuSampleEvery = 8

// serverTLS builds the crypto/tls configuration. Session tickets stay on (Go's default) so that
// a client that keeps its session cache resumes; whether it did is counted per handshake.
func (c TLSConfig) serverTLS() (*tls.Config, error) {
	cert, err := tls.LoadX509KeyPair(c.CertFile, c.KeyFile)
	if err != nil {
		return nil, fmt.Errorf("--tls-cert %s / --tls-key %s: %w", c.CertFile, c.KeyFile, err)
	}
	return &tls.Config{
		Certificates: []tls.Certificate{cert},
		NextProtos:   c.ALPN,
		MinVersion:   tls.VersionTLS12,
	}, nil
}

// tlsMetrics are the handshake counters every TLS server exposes on /metrics, labelled with the
// negotiated state, so that a run records from the server's side what was actually used.
type tlsMetrics struct {
	handshakes *prometheus.CounterVec // version, cipher, curve, alpn, resumed
	failures   *prometheus.CounterVec // reason
	cpu        *prometheus.CounterVec // resumed: sampled handshake CPU seconds
	samples    *prometheus.CounterVec // resumed: handshakes sampled
	inProgress prometheus.Gauge
	n          atomic.Uint64
}

// Handshake-failure reasons (the reason label of protobench_tls_handshake_failures_total).
const (
	FailNotTLS  = "not_tls"      // bytes that are not a TLS record: garbage instead of a ClientHello
	FailEOF     = "eof"          // the client closed mid-handshake
	FailTimeout = "timeout"      // the client stopped mid-handshake
	FailAlert   = "client_alert" // the client refused us, e.g. it does not trust our CA
	FailOther   = "other"
)

func newTLSMetrics(reg *prometheus.Registry) *tlsMetrics {
	t := &tlsMetrics{
		handshakes: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "protobench_tls_handshakes_total",
			Help: "Completed TLS handshakes, by negotiated version, cipher suite, key exchange, ALPN protocol and whether the session was resumed.",
		}, []string{"version", "cipher", "curve", "alpn", "resumed"}),
		failures: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "protobench_tls_handshake_failures_total",
			Help: "TLS handshakes that failed, by reason: not_tls, eof, timeout, client_alert, other.",
		}, []string{"reason"}),
		cpu: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "protobench_tls_handshake_cpu_seconds_total",
			Help: "Server CPU (thread user+system time) spent in the sampled handshakes, by resumed.",
		}, []string{"resumed"}),
		samples: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "protobench_tls_handshake_cpu_samples_total",
			Help: "Handshakes whose CPU was measured (one in 8, on a locked OS thread), by resumed.",
		}, []string{"resumed"}),
	}
	t.inProgress = prometheus.NewGauge(prometheus.GaugeOpts{
		Name: "protobench_tls_handshakes_in_progress",
		Help: "TLS handshakes under way, at most the server's cap (--tls-max-handshakes).",
	})
	reg.MustRegister(t.handshakes, t.failures, t.cpu, t.samples, t.inProgress)
	for _, r := range []string{FailNotTLS, FailEOF, FailTimeout, FailAlert, FailOther} {
		t.failures.WithLabelValues(r)
	}
	return t
}

// classifyHandshake names why a handshake failed.
func classifyHandshake(err error) string {
	var rh tls.RecordHeaderError
	switch {
	case errors.As(err, &rh):
		return FailNotTLS
	case errors.Is(err, context.DeadlineExceeded), errors.Is(err, os.ErrDeadlineExceeded):
		return FailTimeout
	case errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF), errors.Is(err, net.ErrClosed):
		return FailEOF
	case strings.Contains(err.Error(), "remote error"):
		return FailAlert
	case strings.Contains(err.Error(), "connection reset"):
		return FailEOF
	}
	return FailOther
}

// looksLikeHTTP reports whether the first bytes of a connection are an HTTP/1 method.
func looksLikeHTTP(hdr []byte) bool {
	switch string(hdr) {
	case "GET /", "HEAD ", "POST ", "PUT /", "OPTIO", "DELET", "PATCH", "PRI *":
		return true
	}
	return false
}

// tlsListener hands out connections whose handshake has completed. Each handshake runs in its
// own goroutine with a deadline, so a slow or hostile client never blocks Accept, and a failed
// handshake is counted and closed here instead of surfacing as a protocol read error in the
// server (which would not say that TLS was the cause).
type tlsListener struct {
	inner   net.Listener
	conf    *tls.Config
	timeout time.Duration
	m       *tlsMetrics
	ready   chan net.Conn
	done    chan struct{}
	// slots holds one token per handshake in progress (MaxHandshakes).
	slots chan struct{}
	once  sync.Once
	errMu sync.Mutex
	err   error
}

func newTLSListener(inner net.Listener, cfg TLSConfig, m *Metrics) (*tlsListener, error) {
	conf, err := cfg.serverTLS()
	if err != nil {
		return nil, err
	}
	if cfg.HandshakeTimeout <= 0 {
		cfg.HandshakeTimeout = DefaultHandshakeTimeout
	}
	if cfg.MaxHandshakes <= 0 {
		cfg.MaxHandshakes = DefaultMaxHandshakes
	}
	l := &tlsListener{inner: inner, conf: conf, timeout: cfg.HandshakeTimeout, m: m.tlsMetrics(),
		ready: make(chan net.Conn), done: make(chan struct{}), slots: make(chan struct{}, cfg.MaxHandshakes)}
	go l.acceptLoop()
	return l, nil
}

func (l *tlsListener) acceptLoop() {
	for {
		// A slot before Accept: at the cap, new connections stay in the backlog.
		select {
		case l.slots <- struct{}{}:
		case <-l.done:
			return
		}
		c, err := l.inner.Accept()
		if err != nil {
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				<-l.slots
				time.Sleep(5 * time.Millisecond)
				continue
			}
			l.errMu.Lock()
			l.err = err
			l.errMu.Unlock()
			l.Close()
			return
		}
		go l.handshake(c)
	}
}

func (l *tlsListener) handshake(c net.Conn) {
	l.m.inProgress.Inc()
	tc := tls.Server(c, l.conf)
	ctx, cancel := context.WithTimeout(context.Background(), l.timeout)
	sample := l.m.n.Add(1)%cpuSampleEvery == 0
	var t0 time.Duration
	var measured bool
	if sample {
		runtime.LockOSThread()
		t0, measured = threadCPU()
	}
	err := tc.HandshakeContext(ctx)
	var spent time.Duration
	if sample {
		if t1, ok := threadCPU(); ok && measured {
			spent = t1 - t0
		} else {
			measured = false
		}
		runtime.UnlockOSThread()
	}
	cancel()
	l.m.inProgress.Dec()
	<-l.slots
	if err != nil {
		l.m.failures.WithLabelValues(classifyHandshake(err)).Inc()
		var rh tls.RecordHeaderError
		if errors.As(err, &rh) && rh.Conn != nil && looksLikeHTTP(rh.RecordHeader[:]) {
			// What net/http answers, so that curl or a cleartext client says why it failed.
			c.SetWriteDeadline(time.Now().Add(time.Second))
			io.WriteString(c, "HTTP/1.0 400 Bad Request\r\nContent-Type: text/plain\r\nConnection: close\r\n\r\nClient sent an HTTP request to an HTTPS server.\n")
		}
		c.Close()
		return
	}
	st := tc.ConnectionState()
	resumed := fmt.Sprint(st.DidResume)
	curve := "none"
	if st.CurveID != 0 {
		curve = st.CurveID.String()
	}
	l.m.handshakes.WithLabelValues(tls.VersionName(st.Version), tls.CipherSuiteName(st.CipherSuite), curve,
		st.NegotiatedProtocol, resumed).Inc()
	if measured {
		l.m.cpu.WithLabelValues(resumed).Add(spent.Seconds())
		l.m.samples.WithLabelValues(resumed).Inc()
	}
	select {
	case l.ready <- tc:
	case <-l.done:
		c.Close()
	}
}

// Accept returns the next connection whose handshake succeeded.
func (l *tlsListener) Accept() (net.Conn, error) {
	select {
	case c := <-l.ready:
		return c, nil
	case <-l.done:
		l.errMu.Lock()
		defer l.errMu.Unlock()
		if l.err != nil && !errors.Is(l.err, net.ErrClosed) {
			return nil, l.err
		}
		return nil, net.ErrClosed
	}
}

// Close stops accepting; handshakes in progress finish and close their connection.
func (l *tlsListener) Close() error {
	var err error
	l.once.Do(func() {
		close(l.done)
		err = l.inner.Close()
	})
	return err
}

func (l *tlsListener) Addr() net.Addr { return l.inner.Addr() }
