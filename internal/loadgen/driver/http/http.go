// Package httpdriver is the load generator's HTTP/1.1 driver (scheme http://) for the REST
// server. It is a small client of its own rather than net/http: every request is prebuilt bytes
// written with one write, and the response is parsed in place from a bufio.Reader, so a request
// costs two system calls and no allocation. That is what lets one core approach wrk.
//
// HTTP/1.1 carries one request at a time per TCP connection (no pipelining, as wrk does by
// default), so every slot — connections × concurrency — is a TCP connection of its own.
//
// Endpoints (see internal/server/restserver): GET /v1/users/{id}, POST /v1/echo with a raw
// application/octet-stream body, POST /v1/multiply and /v1/divide with JSON. Non-2xx answers are
// errors coded http:<status>; replies are checked against the contract.
package httpdriver

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
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

// Dial implements loadgen.Driver. A connection here is only a recipe: each worker dials its own
// TCP connection. Dial probes the address so that an unreachable target fails at once.
func (Driver) Dial(ctx context.Context, cfg *loadgen.Config, wire *loadgen.WireBytes) (loadgen.Conn, error) {
	if err := loadgen.ProbeTCP(ctx, cfg.Target.Address); err != nil {
		return nil, err
	}
	req, check := buildRequest(cfg)
	return &conn{addr: cfg.Target.Address, wire: wire, req: req, check: check}, nil
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
		fmt.Fprintf(&b, "GET /v1/users/%d HTTP/1.1\r\nHost: %s\r\nUser-Agent: protobench\r\n\r\n", loadgen.UserID, host)
		check = contains(fmt.Sprintf(`"name":%q`, contract.UserByID(loadgen.UserID).Name))
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
		post("/v1/multiply", "application/json", fmt.Appendf(nil, `{"a":%d,"b":%d}`, loadgen.ArithA, loadgen.ArithB))
		check = contains(fmt.Sprintf(`"product":%d`, contract.Multiply(loadgen.ArithA, loadgen.ArithB)))
	case contract.MethodDivide:
		post("/v1/divide", "application/json", fmt.Appendf(nil, `{"a":%d,"b":%d}`, loadgen.ArithA, loadgen.ArithB))
		q, _, _ := contract.Divide(loadgen.ArithA, loadgen.ArithB)
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
}

func (c *conn) Close() error { return nil }

// NewWorker implements loadgen.Conn: one TCP connection per worker.
func (c *conn) NewWorker(ctx context.Context) (loadgen.Worker, error) {
	w := &worker{conn: c}
	if err := w.dial(ctx); err != nil {
		return nil, err
	}
	return w, nil
}

// worker owns one keep-alive TCP connection.
type worker struct {
	conn   *conn
	nc     net.Conn
	br     *bufio.Reader
	body   []byte // reused buffer for bodies that do not fit the reader's buffer
	parent context.Context
	stop   func() bool
}

const readBufferBytes = 16 << 10

func (w *worker) dial(ctx context.Context) error {
	nc, err := loadgen.DialTCP(ctx, w.conn.addr)
	if err != nil {
		return err
	}
	w.nc = loadgen.CountingConn(nc, w.conn.wire)
	if w.br == nil {
		w.br = bufio.NewReaderSize(w.nc, readBufferBytes)
	} else {
		w.br.Reset(w.nc)
	}
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
	status, body, closeAfter, err := w.readResponse()
	if err != nil {
		return w.broken(err)
	}
	if closeAfter {
		w.closeConn()
	}
	if status < 200 || status > 299 {
		return loadgen.ProtocolError("http:"+strconv.Itoa(status), fmt.Errorf("%s", truncate(body)))
	}
	if err := w.conn.check(body); err != nil {
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

var errMalformed = errors.New("malformed HTTP response")

// readResponse parses one response: status line, headers (Content-Length, Transfer-Encoding:
// chunked, Connection: close) and the body. The body slice is valid until the next call.
func (w *worker) readResponse() (status int, body []byte, closeAfter bool, err error) {
	line, err := w.br.ReadSlice('\n')
	if err != nil {
		return 0, nil, false, err
	}
	// "HTTP/1.1 200 OK\r\n"
	if len(line) < 12 || !bytes.HasPrefix(line, []byte("HTTP/1.")) || line[8] != ' ' {
		return 0, nil, false, fmt.Errorf("%w: status line %q", errMalformed, truncate(line))
	}
	status = int(line[9]-'0')*100 + int(line[10]-'0')*10 + int(line[11]-'0')
	if line[7] == '0' {
		closeAfter = true // HTTP/1.0 closes unless told otherwise
	}
	length := -1
	chunked := false
	for {
		line, err = w.br.ReadSlice('\n')
		if err != nil {
			return 0, nil, false, err
		}
		if len(line) <= 2 { // the blank line
			break
		}
		colon := bytes.IndexByte(line, ':')
		if colon < 0 {
			return 0, nil, false, fmt.Errorf("%w: header %q", errMalformed, truncate(line))
		}
		name, value := line[:colon], bytes.TrimSpace(line[colon+1:])
		switch {
		case asciiEqualFold(name, "content-length"):
			n, perr := strconv.Atoi(string(value))
			if perr != nil || n < 0 {
				return 0, nil, false, fmt.Errorf("%w: Content-Length %q", errMalformed, value)
			}
			length = n
		case asciiEqualFold(name, "transfer-encoding"):
			chunked = bytes.Contains(bytes.ToLower(value), []byte("chunked"))
		case asciiEqualFold(name, "connection"):
			closeAfter = asciiEqualFold(value, "close")
		}
	}
	switch {
	case chunked:
		body, err = w.readChunked()
	case length >= 0:
		body, err = w.readN(length)
	case status == 204 || status == 304:
	default:
		// No length: the body runs to the end of the connection.
		w.body, err = io.ReadAll(w.br)
		body, closeAfter = w.body, true
	}
	return status, body, closeAfter, err
}

// readN returns the next n bytes, from the reader's buffer when they fit.
func (w *worker) readN(n int) ([]byte, error) {
	if n <= w.br.Size() {
		b, err := w.br.Peek(n)
		if err != nil {
			return nil, err
		}
		_, _ = w.br.Discard(n)
		return b, nil
	}
	if cap(w.body) < n {
		w.body = make([]byte, n)
	}
	w.body = w.body[:n]
	_, err := io.ReadFull(w.br, w.body)
	return w.body, err
}

func (w *worker) readChunked() ([]byte, error) {
	w.body = w.body[:0]
	for {
		line, err := w.br.ReadSlice('\n')
		if err != nil {
			return nil, err
		}
		line = bytes.TrimSpace(line)
		if i := bytes.IndexByte(line, ';'); i >= 0 {
			line = line[:i]
		}
		size, err := strconv.ParseInt(string(line), 16, 64)
		if err != nil || size < 0 {
			return nil, fmt.Errorf("%w: chunk size %q", errMalformed, line)
		}
		if size == 0 {
			// Trailers, then the blank line.
			for {
				t, err := w.br.ReadSlice('\n')
				if err != nil {
					return nil, err
				}
				if len(t) <= 2 {
					return w.body, nil
				}
			}
		}
		start := len(w.body)
		w.body = slices.Grow(w.body, int(size))[:start+int(size)]
		if _, err := io.ReadFull(w.br, w.body[start:]); err != nil {
			return nil, err
		}
		if _, err := w.br.Discard(2); err != nil { // CRLF after the chunk
			return nil, err
		}
	}
}

func asciiEqualFold(b []byte, s string) bool {
	if len(b) != len(s) {
		return false
	}
	for i := 0; i < len(b); i++ {
		c := b[i]
		if 'A' <= c && c <= 'Z' {
			c += 'a' - 'A'
		}
		if c != s[i] {
			return false
		}
	}
	return true
}
