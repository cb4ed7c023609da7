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

func unaryMetrics(m *serverkit.Metrics) grpc.UnaryServerInterceptor {
	return func(ctx context.Context, req any, info *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
		start := time.Now()
		resp, err := handler(ctx, req)
		m.ObserveRequest(methodName(info.FullMethod), status.Code(err).String(), time.Since(start))
		return resp, err
	}
}

// streamMetrics counts a stream once, with its whole lifetime as its duration; the messages on
// it are counted separately by the handler (pattern "stream").
func streamMetrics(m *serverkit.Metrics) grpc.StreamServerInterceptor {
	return func(srv any, ss grpc.ServerStream, info *grpc.StreamServerInfo, handler grpc.StreamHandler) error {
		start := time.Now()
		err := handler(srv, ss)
		m.ObserveRequest(methodName(info.FullMethod), status.Code(err).String(), time.Since(start))
		return err
	}
}
