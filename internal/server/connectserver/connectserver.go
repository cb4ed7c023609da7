// Package connectserver serves the contract with connect-go (connectrpc.com/connect) on
// net/http: one handler answers the Connect protocol (binary protobuf and JSON), gRPC and
// gRPC-Web, over HTTP/1.1 and h2c on one port (HTTPS/1.1 and HTTPS/2 when a step asks for
// TLS), the way connect-go's users deploy it. The transport is serverkit's HTTP server, the
// very one the REST server runs on, so a difference between the two is the handler's; a
// difference from grpc-go is net/http's HTTP/2 server against grpc-go's own transport
// (connect-go #784).
//
// Limits are the other servers': an Echo payload above the payload limit is RESOURCE_EXHAUSTED
// in every protocol, and a unary request body above the message limit is refused as it arrives
// (at once when its declared length is larger) rather than read to its end, which connect-go
// alone would do to keep the connection. The message limit is MaxMessageBytes widened by
// base64's 4/3, so that a JSON Echo of the largest payload still fits; the payload check then
// holds every encoding to the same limit. Bodies must arrive within the read timeout, headers
// within the read-header timeout (serverkit.HTTPOptions).
//
// Metrics come from an interceptor, with the gRPC code names as the code label ("OK",
// "InvalidArgument"), so they read as grpc-go's do. As with grpc-go, a request refused before a
// handler runs (unknown procedure, body above the limit) is not counted.
package connectserver

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"path"
	"time"

	"connectrpc.com/connect"
	"google.golang.org/grpc/codes"

	"github.com/protobench/protobench/internal/contract"
	"github.com/protobench/protobench/internal/contract/benchpb"
	"github.com/protobench/protobench/internal/contract/benchpb/benchpbconnect"
	"github.com/protobench/protobench/internal/serverkit"
)

// Protocol is the protocol label and server name.
const Protocol = "connect"

// DefaultListen is the Connect server's default address.
const DefaultListen = ":8081"

// envelopeBytes is the gRPC and Connect streaming frame prefix: a flag byte and a 4-byte length.
const envelopeBytes = 5

// Options are the server's settings.
type Options struct {
	MaxPayloadBytes int
	// Compression is serverkit.CompressionNone (gzip unregistered: connect-go compresses
	// nothing, whatever a client advertises) or serverkit.CompressionGzip (connect-go's default:
	// every reply to a client that accepts gzip is compressed, however small).
	Compression string
	serverkit.HTTPOptions
}

// Server is connect-go's handler on serverkit's HTTP server.
type Server struct {
	*serverkit.HTTPServer
	handler     http.Handler
	metrics     *serverkit.Metrics
	errors      *connect.ErrorWriter
	maxPayload  int
	bodyLimit   int64 // a unary request's whole body
	readTimeout time.Duration
}

// MessageLimit is the largest encoded request message the server reads for a payload limit:
// MaxMessageBytes in base64 (JSON carries bytes fields so), plus framing.
func MessageLimit(maxPayload int) int {
	n := serverkit.MaxMessageBytes(maxPayload)
	return 4*((n+2)/3) + serverkit.FramingSlackBytes
}

// New builds the server. Metrics may be nil.
func New(opts Options, m *serverkit.Metrics) *Server {
	s := &Server{maxPayload: opts.MaxPayloadBytes, metrics: m}
	if s.maxPayload <= 0 {
		s.maxPayload = contract.DefaultMaxPayloadBytes
	}
	limit := MessageLimit(s.maxPayload)
	s.bodyLimit = int64(limit + envelopeBytes)
	o := opts.HTTPOptions.WithDefaults()
	s.readTimeout = o.ReadTimeout
	hopts := []connect.HandlerOption{connect.WithReadMaxBytes(limit), connect.WithSendMaxBytes(limit)}
	if opts.Compression != serverkit.CompressionGzip {
		// connect-go registers gzip by default and then compresses every reply to a client
		// that accepts it, down to a few bytes: a gRPC client that merely links gzip (grpc-go's
		// registered codec) would make it gzip every reply. Unregistered, it never compresses.
		hopts = append(hopts, connect.WithCompression("gzip", nil, nil))
	}
	if m != nil {
		hopts = append(hopts, connect.WithInterceptors(metrics{m}))
	}
	mux := http.NewServeMux()
	mux.Handle(benchpbconnect.NewBenchHandler(&bench{metrics: m, maxPayload: s.maxPayload}, hopts...))
	s.handler = mux
	s.errors = connect.NewErrorWriter(hopts...)
	s.HTTPServer = serverkit.NewHTTPServer(s, o)
	return s
}

// ServeHTTP bounds a unary request's body (its size and its arrival time) and hands it to
// connect-go; a stream's messages are bounded one by one by connect-go's read limit.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path != benchpbconnect.BenchEchoStreamProcedure && r.Method == http.MethodPost {
		if r.ContentLength > s.bodyLimit {
			s.errors.Write(w, r, connect.NewError(connect.CodeResourceExhausted,
				fmt.Errorf("body of %d bytes exceeds the limit of %d", r.ContentLength, s.bodyLimit)))
			return
		}
		serverkit.BodyDeadline(w, s.readTimeout)
		r.Body = http.MaxBytesReader(w, r.Body, s.bodyLimit)
	}
	s.handler.ServeHTTP(w, r)
	if s.metrics != nil {
		s.metrics.ObserveEncodings(contentEncoding(r.Header), contentEncoding(w.Header()))
	}
}

// contentEncoding is a request's or reply's message encoding in whichever protocol it speaks:
// gRPC and gRPC-Web's Grpc-Encoding, a Connect stream's Connect-Content-Encoding, a Connect
// unary call's Content-Encoding. The reply's headers stay readable after the handler wrote them.
func contentEncoding(h http.Header) string {
	for _, k := range []string{"Grpc-Encoding", "Content-Encoding", "Connect-Content-Encoding"} {
		if v := h.Get(k); v != "" {
			return v
		}
	}
	return ""
}

// Spec describes the Connect server to serverkit; its knobs are the HTTP servers' own. With
// PROTOBENCH_TLS_CERT set, serverkit terminates TLS in front of it (serverkit.BindConfig, with
// the handshake metrics every TLS server has), and net/http picks HTTPS/2 or HTTPS/1.1 by the
// ALPN protocol the handshake settled: Connect over either, gRPC and gRPC-Web over h2.
var Spec = serverkit.Spec{
	Protocol:      Protocol,
	DefaultListen: DefaultListen,
	Gzip:          true,
	Declare: func(fs *serverkit.Flags) serverkit.Builder {
		httpOpts := serverkit.DeclareHTTP(fs)
		return func(cfg serverkit.Config, m *serverkit.Metrics) (serverkit.Service, error) {
			return serverkit.BindConfig(cfg, m, New(Options{MaxPayloadBytes: cfg.MaxPayloadBytes, Compression: cfg.Compression, HTTPOptions: httpOpts()}, m))
		}
	},
}

type bench struct {
	metrics    *serverkit.Metrics
	maxPayload int
}

func (b *bench) tooBig(n int) error {
	return connect.NewError(connect.CodeResourceExhausted, fmt.Errorf("payload of %d bytes exceeds the limit of %d", n, b.maxPayload))
}

func (b *bench) Echo(_ context.Context, req *connect.Request[benchpb.EchoRequest]) (*connect.Response[benchpb.EchoResponse], error) {
	p := req.Msg.GetPayload()
	if len(p) > b.maxPayload {
		return nil, b.tooBig(len(p))
	}
	return connect.NewResponse(&benchpb.EchoResponse{Payload: p}), nil
}

func (b *bench) GetUser(_ context.Context, req *connect.Request[benchpb.GetUserRequest]) (*connect.Response[benchpb.User], error) {
	u := contract.UserByID(req.Msg.GetId())
	return connect.NewResponse(&benchpb.User{Id: u.ID, Name: u.Name, Email: u.Email, Age: u.Age}), nil
}

func (b *bench) Multiply(_ context.Context, req *connect.Request[benchpb.ArithRequest]) (*connect.Response[benchpb.MultiplyResponse], error) {
	return connect.NewResponse(&benchpb.MultiplyResponse{Product: contract.Multiply(req.Msg.GetA(), req.Msg.GetB())}), nil
}

func (b *bench) Divide(_ context.Context, req *connect.Request[benchpb.ArithRequest]) (*connect.Response[benchpb.DivideResponse], error) {
	q, r, err := contract.Divide(req.Msg.GetA(), req.Msg.GetB())
	if err != nil {
		return nil, connect.NewError(connect.CodeInvalidArgument, err)
	}
	return connect.NewResponse(&benchpb.DivideResponse{Quotient: q, Remainder: r}), nil
}

// EchoStream answers every message in order until the client half-closes (bidirectional, so
// HTTP/2 only, in every protocol connect-go speaks).
func (b *bench) EchoStream(_ context.Context, stream *connect.BidiStream[benchpb.EchoRequest, benchpb.EchoResponse]) error {
	for {
		req, err := stream.Receive()
		if err != nil {
			if errors.Is(err, io.EOF) {
				return nil
			}
			return err
		}
		if len(req.GetPayload()) > b.maxPayload {
			return b.tooBig(len(req.GetPayload()))
		}
		if err := stream.Send(&benchpb.EchoResponse{Payload: req.GetPayload()}); err != nil {
			return err
		}
		if b.metrics != nil {
			b.metrics.ObserveMessage(serverkit.PatternStream, len(req.GetPayload()))
		}
	}
}

// metrics counts every call once, a stream with its whole lifetime as its duration.
type metrics struct{ m *serverkit.Metrics }

func (x metrics) observe(procedure string, start time.Time, err error) {
	code := codes.OK
	if err != nil {
		code = codes.Code(connect.CodeOf(err))
	}
	x.m.ObserveRequest(path.Base(procedure), code.String(), time.Since(start))
}

func (x metrics) WrapUnary(next connect.UnaryFunc) connect.UnaryFunc {
	return func(ctx context.Context, req connect.AnyRequest) (connect.AnyResponse, error) {
		start := time.Now()
		resp, err := next(ctx, req)
		x.observe(req.Spec().Procedure, start, err)
		return resp, err
	}
}

func (metrics) WrapStreamingClient(next connect.StreamingClientFunc) connect.StreamingClientFunc {
	return next
}

func (x metrics) WrapStreamingHandler(next connect.StreamingHandlerFunc) connect.StreamingHandlerFunc {
	return func(ctx context.Context, conn connect.StreamingHandlerConn) error {
		start := time.Now()
		err := next(ctx, conn)
		x.observe(conn.Spec().Procedure, start, err)
		return err
	}
}
