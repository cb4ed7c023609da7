package grpcdriver_test

import (
	"context"
	"io"
	"testing"

	"github.com/protobench/protobench/internal/contract"
	"github.com/protobench/protobench/internal/loadgen"
	_ "github.com/protobench/protobench/internal/loadgen/driver/grpc"
	"github.com/protobench/protobench/internal/servertest"
)

func TestMethodsAgainstRealServers(t *testing.T) {
	servers := []string{servertest.GRPC, servertest.PythonGRPC}
	for _, server := range servers {
		t.Run(server, func(t *testing.T) {
			if server == servertest.PythonGRPC {
				if err := servertest.CheckPython(); err != nil {
					t.Skipf("python-grpc cannot run here: %v", err)
				}
			}
			ep := servertest.Start(t, server)
			for _, method := range []string{contract.MethodGetUser, contract.MethodEcho, contract.MethodMultiply, contract.MethodDivide, contract.MethodEchoStream} {
				t.Run(method, func(t *testing.T) {
					cfg, _, err := loadgen.ParseArgs([]string{
						"--target", "grpc://" + ep.Main, "--method", method,
						"--connections", "2", "--concurrency", "4",
						"--duration", "500ms", "--warmup", "100ms", "--payload-bytes", "1000",
					}, io.Discard)
					if err != nil {
						t.Fatal(err)
					}
					res, err := loadgen.Run(context.Background(), cfg, loadgen.RunOptions{})
					if err != nil {
						t.Fatalf("run: %v", err)
					}
					if res.Requests == 0 || res.Errors != 0 {
						t.Fatalf("requests %d errors %d (%v), want some and none", res.Requests, res.Errors, res.ErrorsByCode)
					}
					if res.BytesSent == 0 || res.BytesReceived == 0 {
						t.Errorf("bytes sent %d received %d, want both counted", res.BytesSent, res.BytesReceived)
					}
					if method == contract.MethodEcho && res.BytesSent < 1000*res.Requests {
						t.Errorf("Echo sent %d bytes for %d requests of 1000 B", res.BytesSent, res.Requests)
					}
				})
			}
		})
	}
}
