// Package grpcserver serves the contract over grpc-go: the Bench service (Echo, GetUser,
// Multiply, Divide, bidirectional EchoStream) plus the standard grpc.health.v1 service.
//
// It is written the way grpc-go's examples write servers, tuned only with the knobs seed 000
// names: MaxConcurrentStreams and the transport's read and write buffer sizes. Metrics come from
// a unary and a stream interceptor. One consequence: a request above the receive limit is
// rejected by grpc-go with RESOURCE_EXHAUSTED while it is being decoded, before any interceptor
// runs, so it is not counted in protobench_server_requests_total.
package grpcserver

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	// gRPC message compression, as grpc-go's users get it: a server that links the codec inflates
	// gzip requests and compresses each reply as its request was. Under compression none the
	// metrics interceptor sends identity replies whatever the request was (metrics.go).
	_ "google.golang.org/grpc/encoding/gzip"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/status"

	"github.com/protobench/protobench/internal/contract"
	"github.com/protobench/protobench/internal/contract/benchpb"
	"github.com/protobench/protobench/internal/serverkit"
)

// Protocol is the protocol label and server name.
const Protocol = "grpc"

// DefaultListen is the gRPC server's default address.
const DefaultListen = ":50051"

// FramingSlackBytes is added to the payload limit to get grpc-go's message-size limit, the
// limit every server shares (serverkit.MaxMessageBytes).
const FramingSlackBytes = serverkit.FramingSlackBytes

// Stream limits. grpc-go's own default is unlimited, which also switches off its guard against
// HTTP/2 rapid reset (CVE-2023-44487): it bounds the stream handlers running on a connection by
// MaxConcurrentStreams, and refuses streams beyond it (REFUSED_STREAM). 1,000 is ten times the
// 100 in flight of the topology sweeps; MaxConcurrentStreamsLimit is the highest a scenario may
// set, seed 000's 100,000 (scenarios/grpc-echo-max.yaml), which targets.Knob.Max repeats.
const (
	DefaultMaxConcurrentStreams = 1000
	MaxConcurrentStreamsLimit   = 100000
)

// Options are the server's settings. Zero values mean grpc-go's own defaults, except
// MaxConcurrentStreams.
type Options struct {
	MaxPayloadBytes      int
	MaxConcurrentStreams int // per connection; 0 = DefaultMaxConcurrentStreams
	ReadBufferBytes      int // 0 = grpc-go default (32 KiB)
	WriteBufferBytes     int // 0 = grpc-go default (32 KiB)
	// StreamWorkers, when above 0, serves streams on that many long-lived goroutines instead of
	// one new goroutine per stream (grpc.NumStreamWorkers, experimental in grpc-go): a new
	// goroutine grows its stack on every call, which took a third of this server's CPU on 128 B
	// Echo. 0 = grpc-go's default, as its users run it.
	StreamWorkers int
	// Compression is serverkit.CompressionNone (replies are never compressed) or
	// serverkit.CompressionGzip (each reply compressed as its request was, grpc-go's own rule).
	Compression string
	// FailEvery, when above 0, fails every FailEvery-th unary call with Unavailable (fail.go):
	// a fault to check that the tools' counts agree with the server's.
	FailEvery int
}

// Server is the grpc-go server with the Bench and health services registered.
type Server struct {
	grpc   *grpc.Server
	health *health.Server
}

// New builds the server. Metrics may be nil (no metrics).
func New(opts Options, m *serverkit.Metrics) *Server {
	maxPayload := opts.MaxPayloadBytes
	if maxPayload <= 0 {
		maxPayload = contract.DefaultMaxPayloadBytes
	}
	streams := opts.MaxConcurrentStreams
	if streams <= 0 {
		streams = DefaultMaxConcurrentStreams
	}
	so := []grpc.ServerOption{
		grpc.MaxRecvMsgSize(serverkit.MaxMessageBytes(maxPayload)),
		grpc.MaxSendMsgSize(serverkit.MaxMessageBytes(maxPayload)),
		grpc.MaxConcurrentStreams(uint32(min(streams, MaxConcurrentStreamsLimit))),
	}
	if opts.ReadBufferBytes > 0 {
		so = append(so, grpc.ReadBufferSize(opts.ReadBufferBytes))
	}
	if opts.WriteBufferBytes > 0 {
		so = append(so, grpc.WriteBufferSize(opts.WriteBufferBytes))
	}
	if opts.StreamWorkers > 0 {
		so = append(so, grpc.NumStreamWorkers(uint32(opts.StreamWorkers)))
	}
	var unary []grpc.UnaryServerInterceptor
	if m != nil {
		unary = append(unary, unaryMetrics(m, opts.Compression))
		so = append(so, grpc.ChainStreamInterceptor(streamMetrics(m, opts.Compression)))
	}
	if opts.FailEvery > 0 {
		unary = append(unary, failEvery(opts.FailEvery))
	}
	if len(unary) > 0 {
		so = append(so, grpc.ChainUnaryInterceptor(unary...))
	}
	s := &Server{grpc: grpc.NewServer(so...), health: health.NewServer()}
	benchpb.RegisterBenchServer(s.grpc, &bench{metrics: m, maxPayload: maxPayload})
	healthpb.RegisterHealthServer(s.grpc, s.health)
	s.health.SetServingStatus("", healthpb.HealthCheckResponse_SERVING)
	s.health.SetServingStatus(benchpb.Bench_ServiceDesc.ServiceName, healthpb.HealthCheckResponse_SERVING)
	return s
}

// GRPC exposes the underlying grpc.Server.
func (s *Server) GRPC() *grpc.Server { return s.grpc }

// Serve accepts connections on ln until Shutdown.
func (s *Server) Serve(ln net.Listener) error {
	err := s.grpc.Serve(ln)
	if errors.Is(err, grpc.ErrServerStopped) {
		return nil
	}
	return err
}

// Shutdown reports NOT_SERVING on the health service, then stops gracefully; when ctx ends
// first (an endless EchoStream, say) it closes every connection.
func (s *Server) Shutdown(ctx context.Context) error {
	s.health.Shutdown()
	done := make(chan struct{})
	go func() {
		s.grpc.GracefulStop()
		close(done)
	}()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		s.grpc.Stop()
		<-done
		return ctx.Err()
	}
}

// Spec describes the gRPC server to serverkit, with seed 000's knobs.
var Spec = serverkit.Spec{
	Protocol:      Protocol,
	DefaultListen: DefaultListen,
	Gzip:          true,
	Declare: func(fs *serverkit.Flags) serverkit.Builder {
		streams := fs.Int("grpc-max-concurrent-streams", "PROTOBENCH_GRPC_MAX_CONCURRENT_STREAMS", DefaultMaxConcurrentStreams,
			"HTTP/2 streams per connection, at most 100000 (seed 000's setting); 0 means the default")
		rbuf := fs.Int("grpc-read-buffer-bytes", "PROTOBENCH_GRPC_READ_BUFFER_BYTES", 32*1024,
			"transport read buffer per connection (grpc-go default 32768)")
		wbuf := fs.Int("grpc-write-buffer-bytes", "PROTOBENCH_GRPC_WRITE_BUFFER_BYTES", 32*1024,
			"transport write buffer per connection (grpc-go default 32768)")
		workers := fs.Int("grpc-stream-workers", "PROTOBENCH_GRPC_STREAM_WORKERS", 0,
			"long-lived goroutines that serve streams (grpc.NumStreamWorkers); 0 keeps grpc-go's goroutine per stream")
		fail := fs.Int("grpc-fail-every", "PROTOBENCH_GRPC_FAIL_EVERY", 0,
			"fail every Nth unary call with Unavailable, to check the tools' counts against the server's; 0 fails none")
		return func(cfg serverkit.Config, m *serverkit.Metrics) (serverkit.Service, error) {
			if *streams < 0 || *streams > MaxConcurrentStreamsLimit {
				return nil, fmt.Errorf("--grpc-max-concurrent-streams %d: want 1 to %d (0: the default, %d)",
					*streams, MaxConcurrentStreamsLimit, DefaultMaxConcurrentStreams)
			}
			return serverkit.BindConfig(cfg, m, New(Options{
				MaxPayloadBytes:      cfg.MaxPayloadBytes,
				MaxConcurrentStreams: *streams,
				ReadBufferBytes:      *rbuf,
				WriteBufferBytes:     *wbuf,
				StreamWorkers:        *workers,
				Compression:          cfg.Compression,
				FailEvery:            *fail,
			}, m))
		}
	},
}

type bench struct {
	benchpb.UnimplementedBenchServer
	metrics    *serverkit.Metrics
	maxPayload int
}

func (b *bench) Echo(_ context.Context, req *benchpb.EchoRequest) (*benchpb.EchoResponse, error) {
	if len(req.GetPayload()) > b.maxPayload {
		return nil, status.Errorf(codes.ResourceExhausted, "payload of %d bytes exceeds the limit of %d", len(req.GetPayload()), b.maxPayload)
	}
	return &benchpb.EchoResponse{Payload: req.GetPayload()}, nil
}

func (b *bench) GetUser(_ context.Context, req *benchpb.GetUserRequest) (*benchpb.User, error) {
	u := contract.UserByID(req.GetId())
	return &benchpb.User{Id: u.ID, Name: u.Name, Email: u.Email, Age: u.Age}, nil
}

func (b *bench) Multiply(_ context.Context, req *benchpb.ArithRequest) (*benchpb.MultiplyResponse, error) {
	return &benchpb.MultiplyResponse{Product: contract.Multiply(req.GetA(), req.GetB())}, nil
}

func (b *bench) Divide(_ context.Context, req *benchpb.ArithRequest) (*benchpb.DivideResponse, error) {
	q, r, err := contract.Divide(req.GetA(), req.GetB())
	if err != nil {
		return nil, status.Error(codes.InvalidArgument, err.Error())
	}
	return &benchpb.DivideResponse{Quotient: q, Remainder: r}, nil
}

// EchoStream answers every message in order until the client half-closes.
func (b *bench) EchoStream(stream grpc.BidiStreamingServer[benchpb.EchoRequest, benchpb.EchoResponse]) error {
	for {
		req, err := stream.Recv()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return err
		}
		if len(req.GetPayload()) > b.maxPayload {
			return status.Errorf(codes.ResourceExhausted, "payload of %d bytes exceeds the limit of %d", len(req.GetPayload()), b.maxPayload)
		}
		if err := stream.Send(&benchpb.EchoResponse{Payload: req.GetPayload()}); err != nil {
			return err
		}
		if b.metrics != nil {
			b.metrics.ObserveMessage(serverkit.PatternStream, len(req.GetPayload()))
		}
	}
}
