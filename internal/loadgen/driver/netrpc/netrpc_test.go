package netrpcdriver_test

import (
	"testing"

	"github.com/protobench/protobench/internal/contract"
	"github.com/protobench/protobench/internal/loadgen/driver/drivertest"
	_ "github.com/protobench/protobench/internal/loadgen/driver/netrpc"
	"github.com/protobench/protobench/internal/servertest"
)

func TestMethodsAgainstRealServer(t *testing.T) {
	ep := servertest.Start(t, servertest.NetRPC, servertest.WithMaxPayloadBytes(1000))
	tests := []struct {
		name       string
		method     string
		payload    string
		wantErrors bool
	}{
		{"GetUser", contract.MethodGetUser, "0", false},
		{"Echo", contract.MethodEcho, "500", false},
		{"Multiply", contract.MethodMultiply, "0", false},
		{"Divide", contract.MethodDivide, "0", false},
		{"Echo above the server's limit is a server error", contract.MethodEcho, "2000", true},
	}
	variants := [][]string{{"--netrpc-client", "lean"}, {"--netrpc-client", "net/rpc"}, {"--rate", "300"}}
	for _, v := range variants {
		for _, tc := range tests {
			t.Run(v[0]+"="+v[1]+" "+tc.name, func(t *testing.T) {
				res := drivertest.Run(t, append([]string{
					"--target", "netrpc://" + ep.Main, "--method", tc.method, "--payload-bytes", tc.payload,
					"--connections", "2", "--concurrency", "8", "--duration", "500ms", "--warmup", "100ms",
				}, v...)...)
				if res.Requests == 0 {
					t.Fatalf("no request completed: %s", res.Error)
				}
				if tc.wantErrors {
					if res.ErrorsByCode["netrpc:error"] != res.Requests {
						t.Fatalf("errors by code %v for %d requests, want all netrpc:error", res.ErrorsByCode, res.Requests)
					}
					return
				}
				if res.Errors != 0 {
					t.Fatalf("errors %d (%v), want none", res.Errors, res.ErrorsByCode)
				}
				if res.BytesSent == 0 || res.BytesReceived == 0 {
					t.Errorf("bytes sent %d received %d, want both counted", res.BytesSent, res.BytesReceived)
				}
			})
		}
	}
}
