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
	"io"
	"net"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
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

// Options are the server's settings. Zero values mean grpc-go's own defaults.
type Options struct {
	MaxPayloadBytes      int
	MaxConcurrentStreams int // per connection; 0 = grpc-go default (unlimited)
	ReadBufferBytes      int // 0 = grpc-go default (32 KiB)
	WriteBufferBytes     int // 0 = grpc-go default (32 KiB)
	// StreamWorkers, when above 0, serves streams on that many long-lived goroutines instead of
	// one new goroutine per stream (grpc.NumStreamWorkers, experimental in grpc-go): a new
	// goroutine grows its stack on every call, which took a third of this server's CPU on 128 B
	// Echo. 0 = grpc-go's default, as its users run it.
	StreamWorkers int
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
	so := []grpc.ServerOption{
		grpc.MaxRecvMsgSize(serverkit.MaxMessageBytes(maxPayload)),
		grpc.MaxSendMsgSize(serverkit.MaxMessageBytes(maxPayload)),
		grpc.MaxConcurrentStreams(uint32(opts.MaxConcurrentStreams)),
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
	if m != nil {
		so = append(so, grpc.ChainUnaryInterceptor(unaryMetrics(m)), grpc.ChainStreamInterceptor(streamMetrics(m)))
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
	Declare: func(fs *serverkit.Flags) serverkit.Builder {
		streams := fs.Int("grpc-max-concurrent-streams", "PROTOBENCH_GRPC_MAX_CONCURRENT_STREAMS", 0,
			"HTTP/2 streams per connection; 0 keeps grpc-go's default (unlimited); seed 000 uses 100000")
		rbuf := fs.Int("grpc-read-buffer-bytes", "PROTOBENCH_GRPC_READ_BUFFER_BYTES", 32*1024,
			"transport read buffer per connection (grpc-go default 32768)")
		wbuf := fs.Int("grpc-write-buffer-bytes", "PROTOBENCH_GRPC_WRITE_BUFFER_BYTES", 32*1024,
			"transport write buffer per connection (grpc-go default 32768)")
		workers := fs.Int("grpc-stream-workers", "PROTOBENCH_GRPC_STREAM_WORKERS", 0,
			"long-lived goroutines that serve streams (grpc.NumStreamWorkers); 0 keeps grpc-go's goroutine per stream")
		return func(cfg serverkit.Config, m *serverkit.Metrics) (serverkit.Service, error) {
			return serverkit.BindConfig(cfg, m, New(Options{
				MaxPayloadBytes:      cfg.MaxPayloadBytes,
				MaxConcurrentStreams: *streams,
				ReadBufferBytes:      *rbuf,
				WriteBufferBytes:     *wbuf,
				StreamWorkers:        *workers,
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
