package serverkit

import (
	"context"
	"errors"
	"net"
	"net/http"
	"time"
)

// HTTP servers (REST, Connect) share one net/http setup: HTTP/1.1 and HTTP/2 cleartext with
// prior knowledge (h2c, through http.Server.Protocols) on one port, and the same guards against
// slow clients, so that a difference between them is their handlers', not their transports'.

// Defaults of the HTTP knobs.
const (
	DefaultReadHeaderTimeout = time.Minute
	DefaultReadTimeout       = time.Minute
	// DefaultMaxConcurrentStreams is net/http's own HTTP/2 default, enough for the 100 requests
	// in flight on one connection that the topology sweeps run.
	DefaultMaxConcurrentStreams = 250
	// DefaultIdleTimeout closes a keep-alive connection nobody has used for this long, so that
	// idle connections cannot pile up without end (net/http keeps them forever when both this
	// and ReadTimeout are 0). Two minutes is well beyond any pause inside a step (warm-up to
	// measurement, a stream's gaps), and each step starts a fresh server.
	DefaultIdleTimeout = 2 * time.Minute
)

// HTTPOptions are the transport settings every HTTP server shares.
type HTTPOptions struct {
	// ReadHeaderTimeout bounds how long a connection may take to send request headers (HTTP/1.1)
	// or, on a new connection, its first bytes: the guard against clients that connect and never
	// finish a request. 0 means DefaultReadHeaderTimeout.
	ReadHeaderTimeout time.Duration
	// ReadTimeout bounds how long a request body may take to arrive, counted from when its
	// handler starts reading it (see BodyDeadline). 0 means DefaultReadTimeout.
	ReadTimeout time.Duration
	// IdleTimeout closes keep-alive connections idle this long; 0 means DefaultIdleTimeout.
	IdleTimeout time.Duration
	// MaxConcurrentStreams bounds the HTTP/2 streams per connection; 0 means
	// DefaultMaxConcurrentStreams.
	MaxConcurrentStreams int
}

// WithDefaults fills the zero values.
func (o HTTPOptions) WithDefaults() HTTPOptions {
	if o.ReadHeaderTimeout <= 0 {
		o.ReadHeaderTimeout = DefaultReadHeaderTimeout
	}
	if o.ReadTimeout <= 0 {
		o.ReadTimeout = DefaultReadTimeout
	}
	if o.MaxConcurrentStreams <= 0 {
		o.MaxConcurrentStreams = DefaultMaxConcurrentStreams
	}
	if o.IdleTimeout <= 0 {
		o.IdleTimeout = DefaultIdleTimeout
	}
	return o
}

// DeclareHTTP adds the HTTP knobs to fs (the same flags and variables on every HTTP server) and
// returns what reads them after parsing.
func DeclareHTTP(fs *Flags) func() HTTPOptions {
	idle := fs.Duration("http-idle-timeout", "PROTOBENCH_HTTP_IDLE_TIMEOUT", DefaultIdleTimeout,
		"close keep-alive connections idle this long; 0 means the default")
	header := fs.Duration("http-read-header-timeout", "PROTOBENCH_HTTP_READ_HEADER_TIMEOUT", DefaultReadHeaderTimeout,
		"time a connection has to send its request headers")
	read := fs.Duration("http-read-timeout", "PROTOBENCH_HTTP_READ_TIMEOUT", DefaultReadTimeout,
		"time a request body has to arrive, from when the server starts reading it")
	streams := fs.Int("http2-max-concurrent-streams", "PROTOBENCH_HTTP2_MAX_CONCURRENT_STREAMS", DefaultMaxConcurrentStreams,
		"HTTP/2 (h2c) streams per connection")
	return func() HTTPOptions {
		return HTTPOptions{ReadHeaderTimeout: *header, ReadTimeout: *read, IdleTimeout: *idle, MaxConcurrentStreams: *streams}
	}
}

// HTTPServer is net/http serving h on HTTP/1.1 and h2c; it is a NetServer.
type HTTPServer struct{ srv *http.Server }

// NewHTTPServer builds the server; o should have its defaults filled (WithDefaults).
func NewHTTPServer(h http.Handler, o HTTPOptions) *HTTPServer {
	var protocols http.Protocols
	protocols.SetHTTP1(true)
	protocols.SetUnencryptedHTTP2(true)
	protocols.SetHTTP2(true) // over TLS, when ALPN picks h2
	return &HTTPServer{srv: &http.Server{
		Handler:           h,
		Protocols:         &protocols,
		ReadHeaderTimeout: o.ReadHeaderTimeout,
		IdleTimeout:       o.IdleTimeout,
		HTTP2:             &http.HTTP2Config{MaxConcurrentStreams: o.MaxConcurrentStreams},
	}}
}

// Serve accepts connections on ln until Shutdown.
func (s *HTTPServer) Serve(ln net.Listener) error {
	err := s.srv.Serve(ln)
	if errors.Is(err, http.ErrServerClosed) {
		return nil
	}
	return err
}

// Shutdown closes the listener and idle connections, waits for active requests until ctx ends,
// then closes the rest.
func (s *HTTPServer) Shutdown(ctx context.Context) error {
	err := s.srv.Shutdown(ctx)
	if err != nil {
		s.srv.Close()
	}
	return err
}

// BodyDeadline gives the request body d from now to arrive. The deadline is set per request,
// only on requests with a body, rather than with http.Server.ReadTimeout: that one would also
// become the idle timeout of keep-alive connections (net/http falls back to it) and would arm a
// timer on every request. net/http lifts the deadline once the request is done (HTTP/1.1: before
// waiting for the next request; HTTP/2: it is the stream's own), so it never touches an idle
// keep-alive connection.
func BodyDeadline(w http.ResponseWriter, d time.Duration) {
	http.NewResponseController(w).SetReadDeadline(time.Now().Add(d))
}
