// Package zmqserver serves the contract over ZeroMQ with pebbe/zmq4 (cgo on libzmq), with the
// three patterns seed 002 describes:
//
//   - a ROUTER socket for request/reply, framed as package zmqwire documents, so one connection
//     carries many outstanding requests (DEALER clients) and REQ clients work too;
//   - a PULL sink for the PUSH/PULL pipeline, which counts messages and bytes
//     (protobench_server_messages_total{pattern="pipeline"});
//   - a PUB socket for fan-out, fed by the Publish request method (pattern="pubsub").
//
// A ZeroMQ socket must not be used from two goroutines at once, so each socket has one owner:
// one goroutine owns the ROUTER and the PUB socket (Publish is handled inline) and another owns
// the PULL socket. Requests are handled inline on the ROUTER goroutine rather than on a worker
// pool behind an inproc DEALER: the contract's work (a protobuf decode and encode, a multiply) is
// a fraction of the cost of the cgo send and receive calls around it, while a proxy to workers
// would add two inproc hops and their copies to every request. The network I/O itself runs on
// libzmq's I/O threads (the io-threads knob), in parallel with the handler goroutine.
//
// Bad input never stops the loops: a message with the wrong frames, an unknown method, a body
// that is not the expected protobuf message or a payload above the limit each get an ERR reply;
// bytes that are not ZMTP are dropped by libzmq with the connection. A frame above the limit every
// server shares (serverkit.MaxMessageBytes: the payload limit plus 1 KiB of framing) is refused
// by libzmq's ZMQ_MAXMSGSIZE, which drops that peer's connection instead of buffering the frame.
package zmqserver

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	zmq "github.com/pebbe/zmq4"
	"google.golang.org/protobuf/proto"

	"github.com/protobench/protobench/internal/contract"
	"github.com/protobench/protobench/internal/contract/benchpb"
	"github.com/protobench/protobench/internal/serverkit"
	"github.com/protobench/protobench/internal/wire/zmqwire"
)

// Protocol is the protocol label and server name.
const Protocol = "zeromq"

// Default addresses of the three sockets.
const (
	DefaultListen     = ":5555"
	DefaultPullListen = ":5556"
	DefaultPubListen  = ":5557"
)

// Defaults of the libzmq knobs (libzmq's own defaults).
const (
	DefaultHWM       = 1000
	DefaultIOThreads = 1
)

// pollInterval bounds how long a loop takes to notice Shutdown; Poll returns at once when a
// message arrives, so it costs no latency.
const pollInterval = 100 * time.Millisecond

// Options are the server's settings.
type Options struct {
	RouterListen, PullListen, PubListen string // host:port; port 0 picks a free port
	MaxPayloadBytes                     int
	SendHWM, RecvHWM                    int // messages queued per peer; 0 = libzmq default (1000)
	IOThreads                           int // libzmq I/O threads; 0 = 1
}

// Server owns a ZeroMQ context and its three bound sockets.
type Server struct {
	opts    Options
	metrics *serverkit.Metrics
	ctx     *zmq.Context
	router  *zmq.Socket
	pull    *zmq.Socket
	pub     *zmq.Socket
	addrs   map[string]string

	stopping atomic.Bool
	done     chan struct{}
	once     sync.Once
}

// New creates the context and binds the ROUTER, PULL and PUB sockets. Metrics may be nil.
func New(opts Options, m *serverkit.Metrics) (*Server, error) {
	if opts.MaxPayloadBytes <= 0 {
		opts.MaxPayloadBytes = contract.DefaultMaxPayloadBytes
	}
	if opts.IOThreads <= 0 {
		opts.IOThreads = DefaultIOThreads
	}
	ctx, err := zmq.NewContext()
	if err != nil {
		return nil, fmt.Errorf("ZeroMQ context: %w", err)
	}
	s := &Server{opts: opts, metrics: m, ctx: ctx, addrs: map[string]string{}, done: make(chan struct{})}
	if err := ctx.SetIoThreads(opts.IOThreads); err != nil {
		s.closeAll()
		return nil, fmt.Errorf("--zmq-io-threads %d: %w", opts.IOThreads, err)
	}
	// A body frame is the payload plus its protobuf framing, a pipeline frame the raw payload:
	// anything larger is dropped with its sender by libzmq rather than buffered.
	maxMsg := int64(serverkit.MaxMessageBytes(opts.MaxPayloadBytes))
	for _, b := range []struct {
		name, addr string
		typ        zmq.Type
		sock       **zmq.Socket
	}{
		{"main", opts.RouterListen, zmq.ROUTER, &s.router},
		{"pull", opts.PullListen, zmq.PULL, &s.pull},
		{"pub", opts.PubListen, zmq.PUB, &s.pub},
	} {
		sock, err := s.bind(b.typ, b.addr, maxMsg)
		if err != nil {
			s.closeAll()
			return nil, fmt.Errorf("%s socket on %s: %w", b.name, b.addr, err)
		}
		*b.sock = sock
		ep, err := sock.GetLastEndpoint()
		if err != nil {
			s.closeAll()
			return nil, err
		}
		s.addrs[b.name] = strings.TrimPrefix(ep, "tcp://")
	}
	return s, nil
}

func (s *Server) bind(typ zmq.Type, addr string, maxMsg int64) (*zmq.Socket, error) {
	ep, err := Endpoint(addr)
	if err != nil {
		return nil, err
	}
	sock, err := s.ctx.NewSocket(typ)
	if err != nil {
		return nil, err
	}
	set := []error{sock.SetLinger(0), sock.SetMaxmsgsize(maxMsg)}
	if s.opts.SendHWM > 0 {
		set = append(set, sock.SetSndhwm(s.opts.SendHWM))
	}
	if s.opts.RecvHWM > 0 {
		set = append(set, sock.SetRcvhwm(s.opts.RecvHWM))
	}
	if err := errors.Join(set...); err != nil {
		sock.Close()
		return nil, err
	}
	if err := sock.Bind(ep); err != nil {
		sock.Close()
		return nil, err
	}
	return sock, nil
}

// Endpoint turns host:port into a ZeroMQ TCP endpoint: an empty host binds every interface
// ("*"), and port 0 asks libzmq for a free port ("*" as the port).
func Endpoint(addr string) (string, error) {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return "", fmt.Errorf("want host:port, got %q", addr)
	}
	if host == "" || host == "0.0.0.0" {
		host = "*"
	}
	if port == "0" {
		port = "*"
	}
	return "tcp://" + host + ":" + port, nil
}

// Addrs returns the bound addresses: "main" (ROUTER), "pull" and "pub".
func (s *Server) Addrs() map[string]string { return s.addrs }

// Serve runs the ROUTER loop on this goroutine and the PULL loop on another until Shutdown, then
// closes the sockets and the context.
func (s *Server) Serve() error {
	var wg sync.WaitGroup
	var pullErr error
	wg.Add(1)
	go func() {
		defer wg.Done()
		pullErr = s.pullLoop()
	}()
	err := s.routerLoop()
	s.stopping.Store(true) // a failed ROUTER loop stops the PULL loop too
	wg.Wait()
	s.closeAll()
	s.once.Do(func() { close(s.done) })
	return errors.Join(err, pullErr)
}

// Shutdown stops both loops. Requests are handled synchronously, so once the ROUTER loop has
// returned nothing is in flight; queued requests that were never read are dropped with the
// sockets (linger 0).
func (s *Server) Shutdown(ctx context.Context) error {
	s.stopping.Store(true)
	select {
	case <-s.done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (s *Server) closeAll() {
	for _, sock := range []*zmq.Socket{s.router, s.pull, s.pub} {
		if sock != nil {
			sock.Close()
		}
	}
	if s.ctx != nil {
		s.ctx.Term()
	}
}

// drain waits for input on sock, then handles every queued message without polling again, so a
// busy socket costs one receive call per message, not a poll and a receive.
func (s *Server) drain(sock *zmq.Socket, handle func([][]byte)) error {
	poller := zmq.NewPoller()
	poller.Add(sock, zmq.POLLIN)
	for !s.stopping.Load() {
		polled, err := poller.Poll(pollInterval)
		if err != nil {
			if zmq.AsErrno(err) == zmq.Errno(syscall.EINTR) { // a signal, not a failure
				continue
			}
			return err
		}
		if len(polled) == 0 {
			continue
		}
		for !s.stopping.Load() {
			msg, err := sock.RecvMessageBytes(zmq.DONTWAIT)
			if err != nil {
				if errno := zmq.AsErrno(err); errno == zmq.Errno(syscall.EAGAIN) || errno == zmq.Errno(syscall.EINTR) {
					break
				}
				return err
			}
			handle(msg)
		}
	}
	return nil
}

func (s *Server) routerLoop() error { return s.drain(s.router, s.handleRequest) }

func (s *Server) pullLoop() error {
	return s.drain(s.pull, func(msg [][]byte) {
		n := 0
		for _, f := range msg {
			n += len(f)
		}
		if s.metrics != nil {
			s.metrics.ObserveMessage(serverkit.PatternPipeline, n)
		}
	})
}

// handleRequest answers one ROUTER message, [identity][empty][method][id][body].
func (s *Server) handleRequest(msg [][]byte) {
	if len(msg) < 2 {
		return // not even an identity and a frame: nothing to reply to
	}
	start := time.Now()
	identity := msg[0]
	req, err := zmqwire.DecodeRequest(msg[1:])
	method := "invalid"
	var body []byte
	if err == nil {
		method = req.Method
		body, err = s.call(req)
		if _, known := knownMethods[method]; !known {
			method = "unknown" // keeps the label bounded whatever clients send
		}
	} else if len(msg) >= 4 && len(msg[3]) == zmqwire.IDBytes {
		req.ID = idOf(msg[3])
	}
	status := zmqwire.StatusOK
	if err != nil {
		status, body = zmqwire.StatusErr, []byte(err.Error())
	}
	// A ROUTER send never blocks: at the high-water mark libzmq drops the reply, which the
	// client sees as a timeout, the same as any overloaded server.
	s.router.SendBytes(identity, zmq.SNDMORE|zmq.DONTWAIT)
	frames := zmqwire.EncodeReply(status, req.ID, body)
	for i, f := range frames {
		flag := zmq.DONTWAIT
		if i < len(frames)-1 {
			flag |= zmq.SNDMORE
		}
		s.router.SendBytes(f, flag)
	}
	if s.metrics != nil {
		s.metrics.ObserveRequest(method, status, time.Since(start))
		s.metrics.ObserveEncodings(serverkit.EncodingIdentity, serverkit.EncodingIdentity) // frames carry no encoding
	}
}

func idOf(b []byte) uint64 {
	var id uint64
	for _, c := range b {
		id = id<<8 | uint64(c)
	}
	return id
}

var knownMethods = map[string]struct{}{
	contract.MethodEcho: {}, contract.MethodGetUser: {}, contract.MethodMultiply: {},
	contract.MethodDivide: {}, zmqwire.MethodPublish: {},
}

// call runs one method and returns the encoded response.
func (s *Server) call(req zmqwire.Request) ([]byte, error) {
	switch req.Method {
	case contract.MethodEcho, zmqwire.MethodPublish:
		var in benchpb.EchoRequest
		if err := proto.Unmarshal(req.Body, &in); err != nil {
			return nil, fmt.Errorf("%s: body is not an EchoRequest: %v", req.Method, err)
		}
		if len(in.Payload) > s.opts.MaxPayloadBytes {
			return nil, fmt.Errorf("payload of %d bytes exceeds the limit of %d", len(in.Payload), s.opts.MaxPayloadBytes)
		}
		if req.Method == zmqwire.MethodPublish {
			// PUB never blocks; a subscriber past its high-water mark loses messages.
			if _, err := s.pub.SendBytes(in.Payload, zmq.DONTWAIT); err != nil {
				return nil, fmt.Errorf("publish: %v", err)
			}
			if s.metrics != nil {
				s.metrics.ObserveMessage(serverkit.PatternPubSub, len(in.Payload))
			}
			return nil, nil
		}
		return proto.Marshal(&benchpb.EchoResponse{Payload: in.Payload})
	case contract.MethodGetUser:
		var in benchpb.GetUserRequest
		if err := proto.Unmarshal(req.Body, &in); err != nil {
			return nil, fmt.Errorf("GetUser: body is not a GetUserRequest: %v", err)
		}
		u := contract.UserByID(in.Id)
		return proto.Marshal(&benchpb.User{Id: u.ID, Name: u.Name, Email: u.Email, Age: u.Age})
	case contract.MethodMultiply, contract.MethodDivide:
		var in benchpb.ArithRequest
		if err := proto.Unmarshal(req.Body, &in); err != nil {
			return nil, fmt.Errorf("%s: body is not an ArithRequest: %v", req.Method, err)
		}
		if req.Method == contract.MethodMultiply {
			return proto.Marshal(&benchpb.MultiplyResponse{Product: contract.Multiply(in.A, in.B)})
		}
		q, r, err := contract.Divide(in.A, in.B)
		if err != nil {
			return nil, err
		}
		return proto.Marshal(&benchpb.DivideResponse{Quotient: q, Remainder: r})
	default:
		return nil, fmt.Errorf("unknown method %q; known: Echo, GetUser, Multiply, Divide, Publish", req.Method)
	}
}

// Spec describes the ZeroMQ server to serverkit, with seed 002's knobs.
var Spec = serverkit.Spec{
	Protocol:      Protocol,
	DefaultListen: DefaultListen,
	Declare: func(fs *serverkit.Flags) serverkit.Builder {
		pull := fs.String("pull-listen", "PROTOBENCH_ZMQ_PULL_LISTEN", DefaultPullListen, "PULL sink address host:port (pipeline)")
		pub := fs.String("pub-listen", "PROTOBENCH_ZMQ_PUB_LISTEN", DefaultPubListen, "PUB address host:port (fan-out)")
		sndhwm := fs.Int("zmq-sndhwm", "PROTOBENCH_ZMQ_SNDHWM", DefaultHWM, "ZMQ_SNDHWM: messages queued per peer before send drops")
		rcvhwm := fs.Int("zmq-rcvhwm", "PROTOBENCH_ZMQ_RCVHWM", DefaultHWM, "ZMQ_RCVHWM: messages queued per peer before receiving stops")
		io := fs.Int("zmq-io-threads", "PROTOBENCH_ZMQ_IO_THREADS", DefaultIOThreads, "libzmq I/O threads")
		return func(cfg serverkit.Config, m *serverkit.Metrics) (serverkit.Service, error) {
			return New(Options{
				RouterListen:    cfg.Listen,
				PullListen:      *pull,
				PubListen:       *pub,
				MaxPayloadBytes: cfg.MaxPayloadBytes,
				SendHWM:         *sndhwm,
				RecvHWM:         *rcvhwm,
				IOThreads:       *io,
			}, m)
		}
	},
}
