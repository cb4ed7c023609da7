// Package netrpcserver serves the contract with Go's standard net/rpc over TCP (gob encoding),
// the way seed 004 did: the server accepts connections and runs rpc.ServeConn on each in its own
// goroutine; net/rpc itself runs every call in a goroutine, so one connection carries many
// outstanding calls (client.Go).
//
// Two services are registered:
//
//	Arith.Multiply(*Args, *int)        seed 004's exact types, so the article's client works
//	Arith.Divide(*Args, *Quotient)     error "division by zero" when B == 0
//	Bench.Echo(*EchoArgs, *EchoReply)
//	Bench.GetUser(*GetUserArgs, *contract.User)
//	Bench.Multiply(*Args, *int)         the same as Arith.Multiply, under the contract's service
//	Bench.Divide(*Args, *Quotient)
//
// net/rpc has no status codes: an error is a string in the reply header. The metrics' code label
// is therefore "OK" or "ERROR". Decoding errors (garbage or truncated frames) make net/rpc close
// that one connection; the server keeps serving the others. gob itself has no size limit and no
// timeout, so each connection's reader follows gob's length-prefixed framing: a message that
// declares more than serverkit.MaxMessageBytes (the limit every server shares), or that has begun
// but not arrived whole within the read timeout, closes the connection before gob allocates or
// waits for it. An Echo payload above the payload limit that fits in a message gets an error
// reply.
package netrpcserver

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/rpc"
	"sync"
	"sync/atomic"
	"time"

	"github.com/protobench/protobench/internal/contract"
	"github.com/protobench/protobench/internal/serverkit"
)

// Protocol is the protocol label and server name.
const Protocol = "netrpc"

// DefaultListen is seed 004's port.
const DefaultListen = ":4200"

// Service and method names as a net/rpc client calls them ("Arith.Multiply", "Bench.Echo").
const (
	ServiceArith = "Arith"
	ServiceBench = "Bench"
)

// Args is seed 004's argument type for Multiply and Divide.
type Args struct {
	A, B int
}

// Quotient is seed 004's reply type for Divide.
type Quotient struct {
	Quo, Rem int
}

// EchoArgs is the argument of Bench.Echo.
type EchoArgs struct {
	Payload []byte
}

// EchoReply is the reply of Bench.Echo.
type EchoReply struct {
	Payload []byte
}

// GetUserArgs is the argument of Bench.GetUser; the reply is a contract.User.
type GetUserArgs struct {
	ID int64
}

// DefaultReadTimeout is how long a message, once begun, may take to arrive whole.
const DefaultReadTimeout = time.Minute

// Options are the server's settings.
type Options struct {
	MaxPayloadBytes int
	// ReadTimeout bounds how long one gob message may take to arrive from its first byte; a
	// connection idle between messages is never timed out. 0 means DefaultReadTimeout.
	ReadTimeout time.Duration
}

// Server is the net/rpc server with Arith and Bench registered.
type Server struct {
	rpc         *rpc.Server
	inflight    atomic.Int64
	maxMessage  uint64
	readTimeout time.Duration

	mu       sync.Mutex
	ln       net.Listener
	conns    map[net.Conn]struct{}
	shutdown bool
}

// New builds the server. Metrics may be nil.
func New(opts Options, m *serverkit.Metrics) (*Server, error) {
	limit := opts.MaxPayloadBytes
	if limit <= 0 {
		limit = contract.DefaultMaxPayloadBytes
	}
	if opts.ReadTimeout <= 0 {
		opts.ReadTimeout = DefaultReadTimeout
	}
	s := &Server{
		rpc:         rpc.NewServer(),
		conns:       map[net.Conn]struct{}{},
		maxMessage:  uint64(serverkit.MaxMessageBytes(limit)),
		readTimeout: opts.ReadTimeout,
	}
	h := handler{server: s, metrics: m, maxPayload: limit}
	if err := s.rpc.RegisterName(ServiceArith, &Arith{h}); err != nil {
		return nil, err
	}
	if err := s.rpc.RegisterName(ServiceBench, &Bench{h}); err != nil {
		return nil, err
	}
	return s, nil
}

// Serve accepts connections on ln and serves each in its own goroutine until Shutdown.
func (s *Server) Serve(ln net.Listener) error {
	s.mu.Lock()
	if s.shutdown {
		s.mu.Unlock()
		ln.Close()
		return nil
	}
	s.ln = ln
	s.mu.Unlock()
	var backoff time.Duration
	for {
		conn, err := ln.Accept()
		if err != nil {
			s.mu.Lock()
			down := s.shutdown
			s.mu.Unlock()
			if down {
				return nil
			}
			// Out of file descriptors and the like: wait and retry rather than stop serving
			// every other connection (the same policy as net/http).
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() || isTemporary(err) {
				backoff = min(max(2*backoff, 5*time.Millisecond), time.Second)
				time.Sleep(backoff)
				continue
			}
			return err
		}
		backoff = 0
		if !s.track(conn) {
			conn.Close()
			continue
		}
		go func() {
			s.rpc.ServeConn(&limitedConn{Conn: conn, maxMessage: s.maxMessage, timeout: s.readTimeout})
			s.untrack(conn)
		}()
	}
}

func isTemporary(err error) bool {
	var t interface{ Temporary() bool }
	return errors.As(err, &t) && t.Temporary()
}

func (s *Server) track(c net.Conn) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.shutdown {
		return false
	}
	s.conns[c] = struct{}{}
	return true
}

func (s *Server) untrack(c net.Conn) {
	s.mu.Lock()
	delete(s.conns, c)
	s.mu.Unlock()
}

// Shutdown stops accepting, waits until no call is in flight (or ctx ends), then closes every
// connection. net/rpc has no graceful stop of its own, and a client blocked on a closed
// connection gets rpc.ErrShutdown, so in-flight calls are let finish first.
func (s *Server) Shutdown(ctx context.Context) error {
	s.mu.Lock()
	s.shutdown = true
	if s.ln != nil {
		s.ln.Close()
	}
	s.mu.Unlock()
	var err error
	tick := time.NewTicker(5 * time.Millisecond)
	defer tick.Stop()
	for s.inflight.Load() > 0 && err == nil {
		select {
		case <-ctx.Done():
			err = ctx.Err()
		case <-tick.C:
		}
	}
	s.mu.Lock()
	for c := range s.conns {
		c.Close()
	}
	s.mu.Unlock()
	return err
}

// Spec describes the net/rpc server to serverkit. Its one knob guards against slow clients;
// seed 004 tuned only the kernel (file descriptors, port range), which compose's ulimits and
// sysctls cover.
var Spec = serverkit.Spec{
	Protocol:      Protocol,
	DefaultListen: DefaultListen,
	Declare: func(fs *serverkit.Flags) serverkit.Builder {
		read := fs.Duration("netrpc-read-timeout", "PROTOBENCH_NETRPC_READ_TIMEOUT", DefaultReadTimeout,
			"time a gob message has to arrive whole, from its first byte")
		return func(cfg serverkit.Config, m *serverkit.Metrics) (serverkit.Service, error) {
			s, err := New(Options{MaxPayloadBytes: cfg.MaxPayloadBytes, ReadTimeout: *read}, m)
			if err != nil {
				return nil, err
			}
			return serverkit.BindConfig(cfg, m, s)
		}
	},
}

// handler is shared by Arith and Bench; it is unexported and its methods are unexported so
// that net/rpc does not try to register them.
type handler struct {
	server     *Server
	metrics    *serverkit.Metrics
	maxPayload int
}

// observe wraps a call with the in-flight count (for Shutdown) and the metrics.
func (h handler) observe(method string, f func() error) error {
	h.server.inflight.Add(1)
	start := time.Now()
	err := f()
	if h.metrics != nil {
		code := "OK"
		if err != nil {
			code = "ERROR"
		}
		h.metrics.ObserveRequest(method, code, time.Since(start))
		h.metrics.ObserveEncodings(serverkit.EncodingIdentity, serverkit.EncodingIdentity) // gob has no compression
	}
	h.server.inflight.Add(-1)
	return err
}

func (h handler) multiply(args *Args, reply *int) error {
	return h.observe(contract.MethodMultiply, func() error {
		*reply = int(contract.Multiply(int64(args.A), int64(args.B)))
		return nil
	})
}

func (h handler) divide(args *Args, quo *Quotient) error {
	return h.observe(contract.MethodDivide, func() error {
		q, r, err := contract.Divide(int64(args.A), int64(args.B))
		if err != nil {
			return err
		}
		quo.Quo, quo.Rem = int(q), int(r)
		return nil
	})
}

// Arith is seed 004's service, with its exact method signatures.
type Arith struct{ h handler }

// Multiply sets *reply to A*B.
func (a *Arith) Multiply(args *Args, reply *int) error { return a.h.multiply(args, reply) }

// Divide sets quo to A/B and A%B, or fails with "division by zero".
func (a *Arith) Divide(args *Args, quo *Quotient) error { return a.h.divide(args, quo) }

// Bench is the contract's service on net/rpc.
type Bench struct{ h handler }

// Echo returns the payload unchanged, or an error when it exceeds the payload limit.
func (b *Bench) Echo(args *EchoArgs, reply *EchoReply) error {
	return b.h.observe(contract.MethodEcho, func() error {
		if len(args.Payload) > b.h.maxPayload {
			return fmt.Errorf("payload of %d bytes exceeds the limit of %d", len(args.Payload), b.h.maxPayload)
		}
		reply.Payload = args.Payload
		return nil
	})
}

// GetUser returns the contract's record for the id.
func (b *Bench) GetUser(args *GetUserArgs, reply *contract.User) error {
	return b.h.observe(contract.MethodGetUser, func() error {
		*reply = contract.UserByID(args.ID)
		return nil
	})
}

// Multiply is Arith.Multiply under the contract's service name.
func (b *Bench) Multiply(args *Args, reply *int) error { return b.h.multiply(args, reply) }

// Divide is Arith.Divide under the contract's service name.
func (b *Bench) Divide(args *Args, quo *Quotient) error { return b.h.divide(args, quo) }
