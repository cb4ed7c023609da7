// Package netrpcdriver is the load generator's net/rpc driver (scheme netrpc://), for seed 004's
// protocol: Go's standard net/rpc with gob encoding over TCP. A connection carries concurrency
// calls outstanding at once, which net/rpc matches to replies by sequence number. In both models
// an event loop speaks the protocol (see lean.go); when churning, or with --netrpc-client
// net/rpc, a connection is one rpc.Client and each slot a worker (client.Go).
//
// It calls the contract's service, "Bench.<Method>", with the argument and reply types the
// server exports (internal/server/netrpcserver). net/rpc has no status codes: a server error is
// coded netrpc:error; a dead connection (rpc.ErrShutdown, unexpected EOF) is a lost connection
// that the engine replaces within the connect timeout.
package netrpcdriver

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/rpc"
	"slices"
	"sync"

	"github.com/protobench/protobench/internal/contract"
	"github.com/protobench/protobench/internal/loadgen"
	"github.com/protobench/protobench/internal/server/netrpcserver"
)

func init() { loadgen.Register("netrpc", Driver{}) }

// Driver is the net/rpc driver.
type Driver struct{}

var methods = []string{contract.MethodGetUser, contract.MethodEcho, contract.MethodMultiply, contract.MethodDivide}

// Info implements loadgen.Driver.
func (Driver) Info() loadgen.DriverInfo {
	return loadgen.DriverInfo{TargetName: "netrpc", Methods: methods}
}

// Check implements loadgen.Driver; the method defaults to GetUser.
func (Driver) Check(cfg *loadgen.Config) error {
	if cfg.Method == "" {
		cfg.Method = methods[0]
	}
	if !slices.Contains(methods, cfg.Method) {
		return fmt.Errorf("--method %q: the netrpc driver calls %v", cfg.Method, methods)
	}
	return nil
}

// CodeServerError is net/rpc's only error kind: the server's error string.
const CodeServerError = "netrpc:error"

// Dial implements loadgen.Driver.
func (d Driver) Dial(ctx context.Context, cfg *loadgen.Config, wire *loadgen.WireBytes) (loadgen.Conn, error) {
	if d.Multiplexes(cfg) {
		return dialLean(ctx, cfg, wire)
	}
	return d.Redial(ctx, cfg, wire)
}

// Redial implements loadgen.Churner: Dial has no probe of its own, the connection is the
// check.
func (Driver) Redial(ctx context.Context, cfg *loadgen.Config, wire *loadgen.WireBytes) (loadgen.Conn, error) {
	c := &conn{cfg: cfg, wire: wire}
	if _, err := c.client(ctx); err != nil {
		return nil, err
	}
	return c, nil
}

type conn struct {
	cfg  *loadgen.Config
	wire *loadgen.WireBytes

	mu     sync.Mutex
	cl     *rpc.Client
	broken bool
}

// client returns the connection's rpc.Client, dialling a new one if the last one broke.
func (c *conn) client(ctx context.Context) (*rpc.Client, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.cl != nil && !c.broken {
		return c.cl, nil
	}
	if c.cl != nil {
		_ = c.cl.Close()
	}
	nc, err := loadgen.DialWire(ctx, c.cfg, c.cfg.Target.Address, c.wire)
	if err != nil {
		return nil, err
	}
	c.cl, c.broken = rpc.NewClient(nc), false
	return c.cl, nil
}

func (c *conn) markBroken(cl *rpc.Client) {
	c.mu.Lock()
	if c.cl == cl {
		c.broken = true
	}
	c.mu.Unlock()
}

func (c *conn) Close() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.cl != nil {
		return c.cl.Close()
	}
	return nil
}

// NewWorker implements loadgen.Conn.
func (c *conn) NewWorker(ctx context.Context) (loadgen.Worker, error) {
	cl, err := c.client(ctx)
	if err != nil {
		return nil, err
	}
	w, err := c.newCall()
	if err != nil {
		return nil, err
	}
	w.conn, w.cl, w.done = c, cl, make(chan *rpc.Call, 1)
	return w, nil
}

// newCall prepares the method's arguments, its reply value and the check of the reply. gob
// leaves fields that are absent from the stream (zero values) untouched, so the reply is reset
// before every call.
func (c *conn) newCall() (*worker, error) {
	w := &worker{method: netrpcserver.ServiceBench + "." + c.cfg.Method}
	switch c.cfg.Method {
	case contract.MethodGetUser:
		var reply contract.User
		want := contract.UserByID(contract.RequestUserID)
		w.args, w.reply, w.reset = &netrpcserver.GetUserArgs{ID: contract.RequestUserID}, &reply, func() { reply = contract.User{} }
		w.check = func() error {
			if reply.ID != want.ID || reply.Name != want.Name {
				return fmt.Errorf("GetUser(%d) returned %+v", contract.RequestUserID, reply)
			}
			return nil
		}
	case contract.MethodEcho:
		var reply netrpcserver.EchoReply
		n := c.cfg.PayloadBytes
		w.args, w.reply, w.reset = &netrpcserver.EchoArgs{Payload: contract.Payload(n)}, &reply, func() { reply.Payload = reply.Payload[:0] }
		w.check = func() error {
			if len(reply.Payload) != n {
				return fmt.Errorf("Echo returned %d bytes, sent %d", len(reply.Payload), n)
			}
			return nil
		}
	case contract.MethodMultiply:
		var reply int
		w.args, w.reply, w.reset = &netrpcserver.Args{A: contract.RequestA, B: contract.RequestB}, &reply, func() { reply = 0 }
		w.check = func() error {
			if int64(reply) != contract.Multiply(contract.RequestA, contract.RequestB) {
				return fmt.Errorf("Multiply returned %d", reply)
			}
			return nil
		}
	case contract.MethodDivide:
		var reply netrpcserver.Quotient
		q, r, _ := contract.Divide(contract.RequestA, contract.RequestB)
		w.args, w.reply, w.reset = &netrpcserver.Args{A: contract.RequestA, B: contract.RequestB}, &reply, func() { reply = netrpcserver.Quotient{} }
		w.check = func() error {
			if int64(reply.Quo) != q || int64(reply.Rem) != r {
				return fmt.Errorf("Divide returned %+v", reply)
			}
			return nil
		}
	default:
		return nil, fmt.Errorf("netrpc driver: no method %q", c.cfg.Method)
	}
	return w, nil
}

// worker keeps one call outstanding at a time on the shared client; Concurrency workers per
// connection make that many outstanding calls.
type worker struct {
	conn   *conn
	cl     *rpc.Client
	method string
	args   any
	reply  any
	reset  func()
	check  func() error
	done   chan *rpc.Call
}

func (w *worker) Do(ctx context.Context) error {
	w.reset()
	call := w.cl.Go(w.method, w.args, w.reply, w.done)
	select {
	case <-call.Done:
	case <-ctx.Done():
		// net/rpc cannot cancel a call; the reply, if any, lands in w.done and is dropped.
		return ctx.Err()
	}
	if err := call.Error; err != nil {
		var se rpc.ServerError
		if errors.As(err, &se) {
			return loadgen.ProtocolError(CodeServerError, err)
		}
		w.conn.markBroken(w.cl)
		if errors.Is(err, rpc.ErrShutdown) || errors.Is(err, io.ErrUnexpectedEOF) {
			return loadgen.ConnLost(&loadgen.CodedError{Code: loadgen.CodeEOF, Err: err})
		}
		return loadgen.ConnLost(err)
	}
	if err := w.check(); err != nil {
		return loadgen.ProtocolError(loadgen.CodeBadResponse, err)
	}
	return nil
}

func (w *worker) Close() error { return nil }
