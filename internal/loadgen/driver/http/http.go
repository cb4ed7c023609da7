// Package httpdriver is the load generator's HTTP/1.1 driver (scheme http://) for the REST
// server. It is a small client of its own rather than net/http: every request is prebuilt bytes
// written with one write, and the response is parsed in place from a bufio.Reader, so a request
// costs two system calls and no allocation. That is what lets one core approach wrk.
//
// HTTP/1.1 carries one request at a time per TCP connection (no pipelining, as wrk does by
// default), so every slot — connections × concurrency — is a TCP connection of its own. In the
// closed model those sockets are served by one event loop per GOMAXPROCS on epoll, as wrk's
// threads do (a loadgen.Multiplexer): a request then costs one write and one read, with no
// goroutine switch. In the open model each socket has a worker goroutine, so that the engine's
// pacer can time every send.
//
// Endpoints (see internal/server/restserver): GET /v1/users/{id}, POST /v1/echo with a raw
// application/octet-stream body, POST /v1/multiply and /v1/divide with JSON. Non-2xx answers are
// errors coded http:<status>; replies are checked against the contract.
package httpdriver

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"slices"
	"strconv"
	"time"

	"github.com/protobench/protobench/internal/contract"
	"github.com/protobench/protobench/internal/loadgen"
)

func init() { loadgen.Register("http", Driver{}) }

// Driver is the HTTP/1.1 driver.
type Driver struct{}

var methods = []string{contract.MethodGetUser, contract.MethodEcho, contract.MethodMultiply, contract.MethodDivide}

// Info implements loadgen.Driver.
func (Driver) Info() loadgen.DriverInfo {
	return loadgen.DriverInfo{TargetName: "rest", Methods: methods}
}

// Check implements loadgen.Driver; the method defaults to GetUser.
func (Driver) Check(cfg *loadgen.Config) error {
	if cfg.Method == "" {
		cfg.Method = methods[0]
	}
	if !slices.Contains(methods, cfg.Method) {
		return fmt.Errorf("--method %q: the http driver calls %v (EchoStream needs gRPC)", cfg.Method, methods)
	}
	return nil
}

// Dial implements loadgen.Driver. In the closed model (on Linux) a connection is Concurrency
// sockets that an event loop serves (see Serve); otherwise it is a recipe from which each worker
// dials its own TCP connection, and Dial probes the address so that an unreachable target fails
// at once.
func (Driver) Dial(ctx context.Context, cfg *loadgen.Config, wire *loadgen.WireBytes) (loadgen.Conn, error) {
	req, check := buildRequest(cfg)
	c := &conn{addr: cfg.Target.Address, wire: wire, req: req, check: check, connectTimeout: cfg.ConnectTimeout}
	if multiplexed(cfg) {
		return c, c.dialSockets(ctx, cfg.Concurrency)
	}
	if err := loadgen.ProbeTCP(ctx, cfg.Target.Address); err != nil {
		return nil, err
	}
	return c, nil
}

// buildRequest returns the request bytes and the check of a 2xx body.
func buildRequest(cfg *loadgen.Config) ([]byte, func([]byte) error) {
	host := cfg.Target.Address
	var b bytes.Buffer
	post := func(path, ctype string, body []byte) {
		fmt.Fprintf(&b, "POST %s HTTP/1.1\r\nHost: %s\r\nUser-Agent: protobench\r\nContent-Type: %s\r\nContent-Length: %d\r\n\r\n", path, host, ctype, len(body))
		b.Write(body)
	}
	var check func([]byte) error
	switch cfg.Method {
	case contract.MethodGetUser:
		fmt.Fprintf(&b, "GET /v1/users/%d HTTP/1.1\r\nHost: %s\r\nUser-Agent: protobench\r\n\r\n", contract.RequestUserID, host)
		check = contains(fmt.Sprintf(`"name":%q`, contract.UserByID(contract.RequestUserID).Name))
	case contract.MethodEcho:
		n := cfg.PayloadBytes
		post("/v1/echo", "application/octet-stream", contract.Payload(n))
		check = func(body []byte) error {
			if len(body) != n {
				return fmt.Errorf("echo returned %d bytes, sent %d", len(body), n)
			}
			return nil
		}
	case contract.MethodMultiply:
		post("/v1/multiply", "application/json", fmt.Appendf(nil, `{"a":%d,"b":%d}`, contract.RequestA, contract.RequestB))
		check = contains(fmt.Sprintf(`"product":%d`, contract.Multiply(contract.RequestA, contract.RequestB)))
	case contract.MethodDivide:
		post("/v1/divide", "application/json", fmt.Appendf(nil, `{"a":%d,"b":%d}`, contract.RequestA, contract.RequestB))
		q, _, _ := contract.Divide(contract.RequestA, contract.RequestB)
		check = contains(fmt.Sprintf(`"quotient":%d`, q))
	}
	return b.Bytes(), check
}

func contains(s string) func([]byte) error {
	want := []byte(s)
	return func(body []byte) error {
		if !bytes.Contains(body, want) {
			return fmt.Errorf("reply %q does not contain %s", truncate(body), want)
		}
		return nil
	}
}

func truncate(b []byte) []byte {
	if len(b) > 80 {
		return b[:80]
	}
	return b
}

type conn struct {
	addr  string
	wire  *loadgen.WireBytes
	req   []byte
	check func([]byte) error
	socks []*rawSock // closed model: the sockets the event loop serves

	connectTimeout time.Duration
}

// NewWorker implements loadgen.Conn: one TCP connection per worker.
func (c *conn) NewWorker(ctx context.Context) (loadgen.Worker, error) {
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
	nc, err := loadgen.DialTCP(ctx, w.conn.addr)
	if err != nil {
		return err
	}
	w.nc = loadgen.CountingConn(nc, w.conn.wire)
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
			return w.conn.outcome(resp)
		}
		n, err := w.nc.Read(w.rb.space())
		w.rb.n += n
		if n == 0 && err != nil {
			return w.broken(err)
		}
	}
}

// outcome judges a complete response.
func (c *conn) outcome(r response) error {
	if r.status < 200 || r.status > 299 {
		return loadgen.ProtocolError("http:"+strconv.Itoa(r.status), fmt.Errorf("%s", truncate(r.body)))
	}
	if err := c.check(r.body); err != nil {
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
