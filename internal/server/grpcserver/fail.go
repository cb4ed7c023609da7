package grpcserver

import (
	"context"
	"path"
	"sync/atomic"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/protobench/protobench/internal/contract/benchpb"
)

// failEvery makes every nth unary call fail with Unavailable, inside the metrics interceptor so
// the server counts it as the error it is. It exists to check the tools' counts: gRPC answers a
// failed call with HTTP 200 and the status in its trailers, so a tool that counts HTTP 200 as
// success (h2load) counts it as one, and only the server's own count (servercount) says so.
func failEvery(n int) grpc.UnaryServerInterceptor {
	var calls atomic.Uint64
	return func(ctx context.Context, req any, info *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
		// Only the contract's calls: a health check that failed would stop the server.
		if path.Dir(info.FullMethod) == "/"+benchpb.Bench_ServiceDesc.ServiceName && calls.Add(1)%uint64(n) == 0 {
			return nil, status.Error(codes.Unavailable, "fail_every: this call was made to fail")
		}
		return handler(ctx, req)
	}
}
