// Package httpdriver is the load generator's HTTP driver (scheme http://) for the REST server,
// over HTTP/1.1 or HTTP/2 cleartext with prior knowledge (h2c, --http-version 2), with JSON or
// protobuf bodies (--encoding), or a request the user declares (--http-method, --http-path,
// --http-header, --http-body) for a server of their own.
//
// HTTP/1.1 is a small client of its own rather than net/http: every request is prebuilt bytes
// written with one write, and the response is parsed in place, so a request costs two system
// calls and no allocation. HTTP/1.1 carries one request at a time per TCP connection (no
// pipelining, as wrk does by default), so every slot — connections × concurrency — is a TCP
// connection of its own. HTTP/2 multiplexes like gRPC: each connection carries concurrency
// streams, framed by package h2wire, which the gRPC driver shares.
//
// In the closed model the sockets are sessions of netloop event loops, one per GOMAXPROCS, as
// wrk's threads (a loadgen.Multiplexer): a request then costs one write and one read, with no
// goroutine switch. The open model runs on the same loops, which time every send themselves;
// the sockets of HTTP/1.1 are then its pool, one request in flight each. With --http-client std
// (or when churning) each slot has a worker goroutine instead: HTTP/1.1 on its own socket, HTTP/2
// through net/http's client.
//
// Endpoints (see internal/server/restserver): GET /v1/users/{id}, POST /v1/echo with a raw
// application/octet-stream body, POST /v1/multiply and /v1/divide with JSON; with protobuf the
// same paths carry the gRPC contract's messages as application/x-protobuf. Non-2xx answers are
// errors coded http:<status>; replies are checked against the contract.
package httpdriver

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"slices"
	"strconv"
	"time"

	"github.com/protobench/protobench/internal/contract"
	"github.com/protobench/protobench/internal/loadgen"
	"github.com/protobench/protobench/internal/loadgen/netloop"
	"github.com/protobench/protobench/internal/wire/h2wire"
)

// http2 reports whether cfg asks for HTTP/2 (h2c).
func http2(cfg *loadgen.Config) bool { return cfg.Options[optVersion] == Version2 }

func init() { loadgen.Register("http", Driver{}) }

// Driver is the HTTP driver: REST's calls, or those of another protocol carried as plain HTTP
// requests (a Variant).
type Driver struct{ v *Variant }

// Variant is a protocol whose calls are plain HTTP requests, one response each (the Connect
// protocol's unary calls, package connectdriver): it runs on this driver's loops, HTTP/1.1 and
// HTTP/2 alike, with only its requests its own.
type Variant struct {
	TargetName string   // recorded when --target-name is not given
	Methods    []string // the methods it calls; the first is the default
	// Build is the call for cfg's method, --encoding and payload.
	Build func(cfg *loadgen.Config) (Call, error)
}

// Call is one prebuilt request of a Variant.
type Call struct {
	Method, Path string
	Headers      []h2wire.Field // besides Host and Content-Length
	Body         []byte
	Check        func(body []byte) error // judges a 2xx body
}

// New is the driver for a Variant, to be registered under the variant's scheme.
func New(v Variant) Driver { return Driver{v: &v} }

// build is the request cfg asks for.
func (d Driver) build(cfg *loadgen.Config) (request, error) {
	if d.v == nil {
		r, err := buildRequest(cfg)
		if err != nil {
			return r, err
		}
		return withCompression(cfg, r)
	}
	c, err := d.v.Build(cfg)
	if err != nil {
		return request{}, err
	}
	return withCompression(cfg, request{method: c.Method, path: c.Path, headers: c.Headers, body: c.Body, check: c.Check})
}

var methods = []string{contract.MethodGetUser, contract.MethodEcho, contract.MethodMultiply, contract.MethodDivide}

// Info implements loadgen.Driver.
func (d Driver) Info() loadgen.DriverInfo {
	if d.v != nil {
		return loadgen.DriverInfo{TargetName: d.v.TargetName, Methods: d.v.Methods, Gzip: true}
	}
	return loadgen.DriverInfo{TargetName: "rest", Methods: methods, Gzip: true}
}

// Check implements loadgen.Driver; the method defaults to GetUser.
func (d Driver) Check(cfg *loadgen.Config) error {
	if d.v != nil {
		if cfg.Method == "" {
			cfg.Method = d.v.Methods[0]
		}
		if !slices.Contains(d.v.Methods, cfg.Method) {
			return fmt.Errorf("--method %q: this driver calls %v", cfg.Method, d.v.Methods)
		}
		_, err := d.v.Build(cfg)
		return err
	}
	if custom(cfg) {
		name := customName(cfg)
		if cfg.Method != "" && cfg.Method != name {
			return fmt.Errorf("--method %q: a request given with --http-path has no contract method", cfg.Method)
		}
		cfg.Method = name
		return nil
	}
	if cfg.Method == "" {
		cfg.Method = methods[0]
	}
	if !slices.Contains(methods, cfg.Method) {
		return fmt.Errorf("--method %q: the http driver calls %v (EchoStream needs gRPC)", cfg.Method, methods)
	}
	return nil
}

// Dial implements loadgen.Driver. In the closed model (on Linux) an HTTP/1.1 connection is
// Concurrency sockets and an HTTP/2 one a socket with Concurrency streams, which event loops
// serve (see Serve); otherwise it is a recipe from which each worker dials, and Dial probes the
// address so that an unreachable target fails at once.
func (d Driver) Dial(ctx context.Context, cfg *loadgen.Config, wire *loadgen.WireBytes) (loadgen.Conn, error) {
	return d.dial(ctx, cfg, wire, true)
}

// Redial implements loadgen.Churner: the recipe without Dial's probe. The worker (HTTP/1.1) or
// its first request (HTTP/2, net/http) opens the connection.
func (d Driver) Redial(ctx context.Context, cfg *loadgen.Config, wire *loadgen.WireBytes) (loadgen.Conn, error) {
	return d.dial(ctx, cfg, wire, false)
}

func (d Driver) dial(ctx context.Context, cfg *loadgen.Config, wire *loadgen.WireBytes, probe bool) (loadgen.Conn, error) {
	r, err := d.build(cfg)
	if err != nil {
		return nil, err
	}
	if cfg.TLS != nil {
		alpn := "http/1.1"
		if http2(cfg) {
			alpn = "h2"
		}
		tc := *cfg
		tc.TLS = loadgen.WithALPN(cfg.TLS, alpn)
		cfg = &tc
	}
	c := &conn{cfg: cfg, addr: cfg.Target.Address, wire: wire, r: r, req: r.http1(cfg.Target.Address), connectTimeout: cfg.ConnectTimeout}
	if http2(cfg) {
		if d.Multiplexes(cfg) {
			s := newH2Session(cfg, c)
			if err := s.Connect(ctx); err != nil {
				return nil, err
			}
			c.sessions = append(c.sessions, s)
			return c, nil
		}
	} else if d.multiplexed(cfg) {
		return c, c.dialSockets(ctx, cfg.Concurrency)
	}
	switch {
	case !probe:
	case cfg.TLS != nil:
		// Over TLS the probe is a handshake, which fails the run with x509's reason (net/http's
		// HTTP/2 client would report a refused certificate on every request as a lost connection
		// with none). The first worker (HTTPS/1.1) or net/http's client (HTTPS/2) then takes it as
		// its connection, so it costs no handshake of its own, and the server counts no
		// handshake aborted by a bare TCP probe.
		nc, err := loadgen.DialWire(ctx, cfg, cfg.Target.Address, wire)
		if err != nil {
			return nil, err
		}
		c.pending = &handedConn{nc: nc}
	default:
		if err := loadgen.ProbeTCP(ctx, cfg.Target.Address); err != nil {
			return nil, err
		}
	}
	if http2(cfg) {
		c.client = newH2Client(cfg, wire, c.pending)
	}
	return c, nil
}

type conn struct {
	cfg      *loadgen.Config
	addr     string
	wire     *loadgen.WireBytes
	r        request
	req      []byte            // HTTP/1.1 bytes of r
	client   *http.Client      // HTTP/2 workers (open model)
	pending  *handedConn       // over TLS: Dial's connection, until a worker or client takes it
	sessions []netloop.Session // closed model: what the event loops serve

	connectTimeout time.Duration
}

// NewWorker implements loadgen.Conn: one TCP connection per HTTP/1.1 worker; HTTP/2 workers
// share the connection's client.
func (c *conn) NewWorker(ctx context.Context) (loadgen.Worker, error) {
	if c.client != nil {
		return &h2Worker{conn: c}, nil
	}
	w := &worker{conn: c}
	if err := w.dial(ctx); err != nil {
		return nil, err
	}
	return w, nil
}

// worker owns one keep-alive TCP connection (open model).
type worker struct {
	conn   *conn
	nc     net.Conn
	rb     respBuffer
	parent context.Context
	stop   func() bool
}

func (w *worker) dial(ctx context.Context) error {
	nc := w.conn.pending.take()
	if nc == nil {
		var err error
		if nc, err = loadgen.DialWire(ctx, w.conn.cfg, w.conn.addr, w.conn.wire); err != nil {
			return err
		}
	}
	w.nc = nc
	w.rb.reset()
	w.parent, w.stop = nil, nil
	return nil
}

// aLongTimeAgo is a deadline in the past: setting it makes blocked reads and writes return.
var aLongTimeAgo = time.Unix(1, 0)

func (w *worker) Do(ctx context.Context) error {
	if w.nc == nil {
		// The server closed the previous connection after its reply (Connection: close).
		if err := w.dial(ctx); err != nil {
			return loadgen.ConnLost(err)
		}
	}
	// Tie the connection to the caller's context, once per distinct context: cancelling it
	// unblocks the read through a past deadline.
	if ctx != w.parent {
		if w.stop != nil {
			w.stop()
		}
		nc := w.nc
		w.parent, w.stop = ctx, context.AfterFunc(ctx, func() { _ = nc.SetDeadline(aLongTimeAgo) })
	}
	if _, err := w.nc.Write(w.conn.req); err != nil {
		return w.broken(err)
	}
	for {
		resp, done, err := w.rb.parse()
		if err != nil {
			return w.broken(err)
		}
		if done {
			if resp.closeAfter {
				w.closeConn()
			}
			return w.conn.outcome(resp.status, resp.gzip, resp.body)
		}
		n, err := w.nc.Read(w.rb.space())
		w.rb.n += n
		if n == 0 && err != nil {
			return w.broken(err)
		}
	}
}

// outcome judges a complete response. A gzip body is counted (WireBytes.CompressedReplies, the
// client's side of what the server says it compressed) and inflated before it is judged.
func (c *conn) outcome(status int, gzipBody bool, body []byte) error {
	if gzipBody {
		if c.wire != nil {
			c.wire.CompressedReplies.Add(1)
		}
		inflated, f, err := loadgen.Inflate(body)
		if err != nil {
			return loadgen.ProtocolError(loadgen.CodeBadResponse, fmt.Errorf("reply says Content-Encoding gzip but does not inflate: %v", err))
		}
		defer f.Release()
		body = inflated
	}
	if status < 200 || status > 299 {
		return loadgen.ProtocolError("http:"+strconv.Itoa(status), fmt.Errorf("%s", truncate(body)))
	}
	if err := c.r.check(body); err != nil {
		return loadgen.ProtocolError(loadgen.CodeBadResponse, err)
	}
	return nil
}

// broken closes a connection whose request failed halfway: its byte stream can no longer be
// trusted, so the engine gets ConnLost and asks for a new worker.
func (w *worker) broken(err error) error {
	w.closeConn()
	if isTimeout(err) {
		return loadgen.ConnLost(&loadgen.CodedError{Code: loadgen.CodeTimeout, Err: err})
	}
	return loadgen.ConnLost(err)
}

func isTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}

func (w *worker) closeConn() {
	if w.stop != nil {
		w.stop()
	}
	if w.nc != nil {
		_ = w.nc.Close()
	}
	w.nc, w.parent, w.stop = nil, nil, nil
}

func (w *worker) Close() error {
	w.closeConn()
	return nil
}
