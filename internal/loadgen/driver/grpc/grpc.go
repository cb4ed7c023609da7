// Package grpcdriver is the load generator's gRPC driver (scheme grpc://), used for the Go and the
// Python gRPC servers alike. A connection is one HTTP/2 connection; its concurrency slots are
// concurrent unary calls on it, or for EchoStream one bidirectional stream each (connections ×
// streams per connection).
//
// Unary calls, in both models, run on the driver's lean HTTP/2 client (lean.go, on package h2wire)
// from event loops; EchoStream, churn and --grpc-client grpc-go use grpc-go, where a connection is
// one grpc.ClientConn and each slot a worker goroutine.
//
// Bytes are counted on the TCP connection itself, so they include HTTP/2 framing and headers.
// Replies are checked against the contract: a reply that parses but is wrong is an error.
package grpcdriver

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"slices"
	"strings"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/connectivity"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	"github.com/protobench/protobench/internal/contract"
	"github.com/protobench/protobench/internal/contract/benchpb"
	"github.com/protobench/protobench/internal/loadgen"
)

func init() { loadgen.Register("grpc", Driver{}) }

// Driver is the gRPC driver.
type Driver struct{}

var methods = []string{contract.MethodGetUser, contract.MethodEcho, contract.MethodMultiply, contract.MethodDivide, contract.MethodEchoStream}

// Info implements loadgen.Driver.
func (Driver) Info() loadgen.DriverInfo {
	return loadgen.DriverInfo{TargetName: "grpc", Methods: methods, Gzip: true}
}

// Check implements loadgen.Driver; the method defaults to GetUser.
func (Driver) Check(cfg *loadgen.Config) error {
	if raw := rawCall(cfg); raw != nil {
		cfg.Method = strings.TrimPrefix(raw.Path, "/")
		return nil
	}
	if cfg.Method == "" {
		cfg.Method = methods[0]
	}
	if !slices.Contains(methods, cfg.Method) {
		return fmt.Errorf("--method %q: the grpc driver calls %v", cfg.Method, methods)
	}
	return nil
}

// maxMessageBytes lets the largest payload the contract allows through, with framing to spare.
const maxMessageBytes = contract.DefaultMaxPayloadBytes + 64<<10

// Dial implements loadgen.Driver. grpc-go connects lazily and retries quietly, so the address is
// first probed with a plain TCP dial: an unreachable target then fails with the system's own
// reason ("connection refused") within the connect timeout.
func (d Driver) Dial(ctx context.Context, cfg *loadgen.Config, wire *loadgen.WireBytes) (loadgen.Conn, error) {
	if d.Multiplexes(cfg) {
		return dialLean(ctx, cfg, wire)
	}
	return d.dial(ctx, cfg, wire, true)
}

// Redial implements loadgen.Churner: a grpc-go connection without Dial's probe, which over TLS
// is a handshake of its own.
func (d Driver) Redial(ctx context.Context, cfg *loadgen.Config, wire *loadgen.WireBytes) (loadgen.Conn, error) {
	return d.dial(ctx, cfg, wire, false)
}

func (d Driver) dial(ctx context.Context, cfg *loadgen.Config, wire *loadgen.WireBytes, probe bool) (loadgen.Conn, error) {
	addr := cfg.Target.Address
	switch {
	case !probe:
	case cfg.TLS != nil:
		// A handshake probe: grpc-go would only report TRANSIENT_FAILURE for a refused
		// certificate; this names the reason (x509: certificate signed by unknown authority).
		pc := *cfg
		pc.TLS = loadgen.WithALPN(cfg.TLS, "h2")
		c, err := loadgen.DialWire(ctx, &pc, addr, nil)
		if err != nil {
			return nil, err
		}
		c.Close()
	default:
		if err := loadgen.ProbeTCP(ctx, addr); err != nil {
			return nil, err
		}
	}
	creds := insecure.NewCredentials()
	if cfg.TLS != nil {
		// grpc-go does the handshake on the counted connection, and requires ALPN h2.
		creds = credentials.NewTLS(loadgen.WithALPN(cfg.TLS, "h2"))
	}
	opts := append([]grpc.DialOption{
		grpc.WithTransportCredentials(creds),
		grpc.WithContextDialer(func(ctx context.Context, a string) (net.Conn, error) {
			var d net.Dialer
			c, err := d.DialContext(ctx, "tcp", a)
			if err != nil {
				return nil, err
			}
			return loadgen.CountingConn(c, wire), nil
		}),
		grpc.WithDefaultCallOptions(grpc.MaxCallRecvMsgSize(maxMessageBytes), grpc.MaxCallSendMsgSize(maxMessageBytes)),
	}, compression(cfg, wire)...)
	cc, err := grpc.NewClient("passthrough:///"+addr, opts...)
	if err != nil {
		return nil, &loadgen.DialError{Address: addr, Err: err}
	}
	c := &conn{cc: cc, cfg: cfg}
	c.ctx, c.cancel = context.WithCancel(context.Background())
	if err := c.waitReady(ctx); err != nil {
		_ = cc.Close()
		return nil, err
	}
	return c, nil
}

type conn struct {
	cc     *grpc.ClientConn
	cfg    *loadgen.Config
	ctx    context.Context // lives as long as the connection: streams hang off it
	cancel context.CancelFunc
}

// waitReady waits until the connection is READY or ctx ends.
func (c *conn) waitReady(ctx context.Context) error {
	c.cc.Connect()
	for {
		s := c.cc.GetState()
		if s == connectivity.Ready {
			return nil
		}
		if !c.cc.WaitForStateChange(ctx, s) {
			return &loadgen.DialError{Address: c.cfg.Target.Address, Err: fmt.Errorf("gRPC connection not ready (state %s): %w", s, ctx.Err())}
		}
	}
}

func (c *conn) Close() error {
	c.cancel()
	return c.cc.Close()
}

// NewWorker implements loadgen.Conn. After a lost connection grpc-go reconnects by itself; the
// worker only has to wait until it is READY again.
func (c *conn) NewWorker(ctx context.Context) (loadgen.Worker, error) {
	if c.cc.GetState() != connectivity.Ready {
		// grpc-go hides why it cannot connect; a plain dial says it (connection refused).
		if err := loadgen.ProbeTCP(ctx, c.cfg.Target.Address); err != nil {
			return nil, err
		}
	}
	if err := c.waitReady(ctx); err != nil {
		return nil, err
	}
	if c.cfg.Method == contract.MethodEchoStream {
		return &streamWorker{conn: c, payload: len(contract.Payload(c.cfg.PayloadBytes)), req: &benchpb.EchoRequest{Payload: contract.Payload(c.cfg.PayloadBytes)}, resp: &benchpb.EchoResponse{}}, nil
	}
	if raw := rawCall(c.cfg); raw != nil {
		return &rawWorker{cc: c.cc, call: raw, req: rawMessage{b: raw.Request}}, nil
	}
	return newUnary(c.cc, c.cfg)
}

// unaryWorker calls one unary method with a prebuilt request and reuses its response message.
type unaryWorker struct {
	cc     *grpc.ClientConn
	method string
	req    proto.Message
	resp   proto.Message
	check  func() error
}

const service = "/protobench.v1.Bench/"

func newUnary(cc *grpc.ClientConn, cfg *loadgen.Config) (*unaryWorker, error) {
	w := &unaryWorker{cc: cc, method: service + cfg.Method}
	switch cfg.Method {
	case contract.MethodGetUser:
		resp := &benchpb.User{}
		w.req, w.resp = &benchpb.GetUserRequest{Id: contract.RequestUserID}, resp
		want := contract.UserByID(contract.RequestUserID)
		w.check = func() error {
			if resp.Id != want.ID || resp.Name != want.Name {
				return badResponse("GetUser(%d) returned id %d name %q", contract.RequestUserID, resp.Id, resp.Name)
			}
			return nil
		}
	case contract.MethodEcho:
		resp := &benchpb.EchoResponse{}
		n := cfg.PayloadBytes
		w.req, w.resp = &benchpb.EchoRequest{Payload: contract.Payload(n)}, resp
		w.check = func() error {
			if len(resp.Payload) != n {
				return badResponse("Echo returned %d bytes, sent %d", len(resp.Payload), n)
			}
			return nil
		}
	case contract.MethodMultiply:
		resp := &benchpb.MultiplyResponse{}
		w.req, w.resp = &benchpb.ArithRequest{A: contract.RequestA, B: contract.RequestB}, resp
		w.check = func() error {
			if resp.Product != contract.Multiply(contract.RequestA, contract.RequestB) {
				return badResponse("Multiply returned %d", resp.Product)
			}
			return nil
		}
	case contract.MethodDivide:
		resp := &benchpb.DivideResponse{}
		w.req, w.resp = &benchpb.ArithRequest{A: contract.RequestA, B: contract.RequestB}, resp
		q, r, _ := contract.Divide(contract.RequestA, contract.RequestB)
		w.check = func() error {
			if resp.Quotient != q || resp.Remainder != r {
				return badResponse("Divide returned %d rem %d", resp.Quotient, resp.Remainder)
			}
			return nil
		}
	default:
		return nil, fmt.Errorf("grpc driver: no unary method %q", cfg.Method)
	}
	return w, nil
}

func badResponse(format string, args ...any) error {
	return loadgen.ProtocolError(loadgen.CodeBadResponse, fmt.Errorf(format, args...))
}

func (w *unaryWorker) Do(ctx context.Context) error {
	if err := w.cc.Invoke(ctx, w.method, w.req, w.resp); err != nil {
		return classify(err)
	}
	return w.check()
}

func (w *unaryWorker) Close() error { return nil }

// classify names a gRPC error by its status code. UNAVAILABLE means the transport is gone (or
// going): the engine then waits for the connection to be READY again before the next call.
func classify(err error) error {
	st, ok := status.FromError(err)
	if !ok {
		return err
	}
	code := "grpc:" + st.Code().String()
	switch st.Code() {
	case codes.Canceled:
		return err // the run ended under the call; the engine knows
	case codes.Unavailable:
		return loadgen.ConnLost(loadgen.ProtocolError(code, errors.New(st.Message())))
	}
	return loadgen.ProtocolError(code, errors.New(st.Message()))
}

// streamWorker sends one message on its own bidirectional stream and waits for the echo.
type streamWorker struct {
	conn    *conn
	stream  grpc.ClientStream
	cancel  context.CancelFunc
	parent  context.Context // the context the stream's cancellation is tied to
	stop    func() bool
	payload int
	req     *benchpb.EchoRequest
	resp    *benchpb.EchoResponse
}

var streamDesc = &grpc.StreamDesc{StreamName: contract.MethodEchoStream, ServerStreams: true, ClientStreams: true}

func (w *streamWorker) Do(ctx context.Context) error {
	if w.stream == nil {
		sctx, cancel := context.WithCancel(w.conn.ctx)
		s, err := w.conn.cc.NewStream(sctx, streamDesc, service+contract.MethodEchoStream)
		if err != nil {
			cancel()
			return classify(err)
		}
		w.stream, w.cancel = s, cancel
	}
	// The stream outlives each call, so tie its cancellation to the caller's context, once per
	// distinct context (the run's, unless a per-request timeout makes one per call).
	if ctx != w.parent {
		if w.stop != nil {
			w.stop()
		}
		w.parent, w.stop = ctx, context.AfterFunc(ctx, w.cancel)
	}
	if err := w.stream.SendMsg(w.req); err != nil {
		return w.fail(err)
	}
	if err := w.stream.RecvMsg(w.resp); err != nil {
		return w.fail(err)
	}
	if len(w.resp.Payload) != w.payload {
		return badResponse("EchoStream returned %d bytes, sent %d", len(w.resp.Payload), w.payload)
	}
	return nil
}

// fail drops a broken stream so that the next call opens a new one.
func (w *streamWorker) fail(err error) error {
	if errors.Is(err, io.EOF) {
		// SendMsg reports io.EOF when the stream has ended; its status is on RecvMsg.
		if rerr := w.stream.RecvMsg(w.resp); rerr != nil {
			err = rerr
		}
	}
	w.reset()
	return classify(err)
}

func (w *streamWorker) reset() {
	if w.stop != nil {
		w.stop()
	}
	if w.cancel != nil {
		w.cancel()
	}
	w.stream, w.cancel, w.parent, w.stop = nil, nil, nil, nil
}

func (w *streamWorker) Close() error {
	if w.stream != nil {
		_ = w.stream.CloseSend()
	}
	w.reset()
	return nil
}
