// Command protobench-grpc-server serves the workload contract over grpc-go.
//
//	go run ./servers/grpc --listen 127.0.0.1:50051
//
// Flags and environment variables: run with -h. All logic is in internal/server/grpcserver.
package main

import (
	"github.com/protobench/protobench/internal/server/grpcserver"
	"github.com/protobench/protobench/internal/serverkit"
)

func main() { serverkit.Main(grpcserver.Spec) }
