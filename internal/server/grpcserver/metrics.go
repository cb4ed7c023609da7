package grpcserver

import (
	"context"
	"path"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/status"

	"github.com/protobench/protobench/internal/serverkit"
)

// methodName turns "/protobench.v1.Bench/Echo" into "Echo", the contract's method name, so the
// method label means the same thing on every protocol.
func methodName(full string) string { return path.Base(full) }

// compressors is what grpc-go's server stream (in the call's context) says of the call's
// message encodings: the request's grpc-encoding and the compressor of the reply.
type compressors interface {
	RecvCompress() string
	SendCompress() string
}

// encodings returns the call's stream, after keeping its reply uncompressed under compression
// none: grpc-go would otherwise answer a compressed request with a compressed reply.
func encodings(ctx context.Context, compression string) compressors {
	st, _ := grpc.ServerTransportStreamFromContext(ctx).(compressors)
	if st == nil {
		return nil
	}
	if rc := st.RecvCompress(); compression != serverkit.CompressionGzip && rc != "" && rc != serverkit.EncodingIdentity {
		_ = grpc.SetSendCompressor(ctx, serverkit.EncodingIdentity)
	}
	return st
}

func observeEncodings(m *serverkit.Metrics, st compressors) {
	if st != nil {
		m.ObserveEncodings(st.RecvCompress(), st.SendCompress())
	}
}

func unaryMetrics(m *serverkit.Metrics, compression string) grpc.UnaryServerInterceptor {
	return func(ctx context.Context, req any, info *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
		start := time.Now()
		st := encodings(ctx, compression)
		resp, err := handler(ctx, req)
		m.ObserveRequest(methodName(info.FullMethod), status.Code(err).String(), time.Since(start))
		observeEncodings(m, st)
		return resp, err
	}
}

// streamMetrics counts a stream once, with its whole lifetime as its duration; the messages on
// it are counted separately by the handler (pattern "stream").
func streamMetrics(m *serverkit.Metrics, compression string) grpc.StreamServerInterceptor {
	return func(srv any, ss grpc.ServerStream, info *grpc.StreamServerInfo, handler grpc.StreamHandler) error {
		start := time.Now()
		st := encodings(ss.Context(), compression)
		err := handler(srv, ss)
		m.ObserveRequest(methodName(info.FullMethod), status.Code(err).String(), time.Since(start))
		observeEncodings(m, st)
		return err
	}
}
