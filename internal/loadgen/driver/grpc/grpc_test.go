package grpcdriver_test

import (
	"context"
	"io"
	"testing"

	"google.golang.org/protobuf/proto"

	"github.com/protobench/protobench/internal/contract"
	"github.com/protobench/protobench/internal/contract/benchpb"
	"github.com/protobench/protobench/internal/loadgen"
	"github.com/protobench/protobench/internal/loadgen/driver/drivertest"
	grpcdriver "github.com/protobench/protobench/internal/loadgen/driver/grpc"
	"github.com/protobench/protobench/internal/servertest"
)

// Every method through both clients (the lean one serves unary calls in the closed model) and
// in both models, against the Go and the Python servers.
func TestMethodsAgainstRealServers(t *testing.T) {
	variants := []struct {
		name string
		args []string
	}{
		{"lean closed", []string{"--grpc-client", "lean"}},
		{"grpc-go closed", []string{"--grpc-client", "grpc-go"}},
		{"open", []string{"--rate", "300"}},
	}
	servers := []struct {
		label, server string
		gzip          bool // compression gzip: the client compresses requests, the server replies
	}{
		{"grpc", servertest.GRPC, false},
		{"python-grpc", servertest.PythonGRPC, false},
		{"python-grpc gzip", servertest.PythonGRPC, true},
	}
	for _, sv := range servers {
		server := sv.server
		t.Run(sv.label, func(t *testing.T) {
			if server == servertest.PythonGRPC {
				if err := servertest.CheckPython(); err != nil {
					t.Skipf("python-grpc cannot run here: %v", err)
				}
			}
			var opts []servertest.Option
			if sv.gzip {
				opts = append(opts, servertest.WithKnob("PROTOBENCH_COMPRESSION", "gzip"))
			}
			ep := servertest.Start(t, server, opts...)
			for _, v := range variants {
				for _, method := range []string{contract.MethodGetUser, contract.MethodEcho, contract.MethodMultiply, contract.MethodDivide, contract.MethodEchoStream} {
					t.Run(v.name+" "+method, func(t *testing.T) {
						args := v.args
						if sv.gzip {
							args = append([]string{"--compression", "gzip"}, args...)
						}
						res := drivertest.RunClean(t, true, append([]string{
							"--target", "grpc://" + ep.Main, "--method", method,
							"--connections", "2", "--concurrency", "4",
							"--duration", "500ms", "--warmup", "100ms", "--payload-bytes", "1000",
						}, args...)...)
						if !sv.gzip && method == contract.MethodEcho && res.BytesSent < 1000*res.Requests {
							t.Errorf("Echo sent %d bytes for %d requests of 1000 B", res.BytesSent, res.Requests)
						}
						// The payload is a repeating pattern: gzipped replies are far smaller than
						// it, so this shows they were compressed and still checked whole.
						if sv.gzip && method == contract.MethodEcho && res.BytesReceived >= 1000*res.Requests {
							t.Errorf("gzip server: received %d bytes for %d Echo replies of 1000 B; were they compressed?", res.BytesReceived, res.Requests)
						}
					})
				}
			}
		})
	}
}

// A payload above the server's limit fails every call with its status code, through either
// client, and the connection stays usable.
func TestStatusCodesAreClassified(t *testing.T) {
	ep := servertest.Start(t, servertest.GRPC, servertest.WithMaxPayloadBytes(1000))
	for _, client := range []string{"lean", "grpc-go"} {
		t.Run(client, func(t *testing.T) {
			cfg, _, err := loadgen.ParseArgs([]string{
				"--target", "grpc://" + ep.Main, "--method", "Echo", "--payload-bytes", "8000", "--grpc-client", client,
				"--connections", "1", "--concurrency", "2", "--duration", "300ms", "--warmup", "0s",
			}, io.Discard)
			if err != nil {
				t.Fatal(err)
			}
			res, _ := loadgen.Run(context.Background(), cfg, loadgen.RunOptions{})
			if res.Requests == 0 || res.Errors != res.Requests || res.ErrorsByCode["grpc:ResourceExhausted"] != res.Errors {
				t.Fatalf("requests %d errors %d by code %v, want every call to fail with grpc:ResourceExhausted", res.Requests, res.Errors, res.ErrorsByCode)
			}
		})
	}
}

// A raw call (a method path and a pre-encoded request, as for a user's own service) checks only
// grpc-status, through either client.
func TestRawCall(t *testing.T) {
	ep := servertest.Start(t, servertest.GRPC)
	req, err := proto.Marshal(&benchpb.GetUserRequest{Id: contract.RequestUserID})
	if err != nil {
		t.Fatal(err)
	}
	for _, model := range []string{"0", "200"} {
		for _, tc := range []struct {
			path     string
			wantCode string // "" for no errors
		}{
			{"protobench.v1.Bench/GetUser", ""},
			{"/protobench.v1.Bench/NoSuchMethod", "grpc:Unimplemented"},
		} {
			t.Run(tc.path+" rate "+model, func(t *testing.T) {
				cfg, _, err := loadgen.ParseArgs([]string{
					"--target", "grpc://" + ep.Main, "--rate", model,
					"--connections", "1", "--concurrency", "4", "--duration", "400ms", "--warmup", "0s",
				}, io.Discard)
				if err != nil {
					t.Fatal(err)
				}
				if err := grpcdriver.SetRawCall(cfg, grpcdriver.RawCall{Path: tc.path, Request: req}); err != nil {
					t.Fatal(err)
				}
				d, _ := loadgen.Lookup("grpc")
				if err := d.Check(cfg); err != nil {
					t.Fatal(err)
				}
				res, _ := loadgen.Run(context.Background(), cfg, loadgen.RunOptions{})
				if res.Requests == 0 {
					t.Fatal("no requests")
				}
				if tc.wantCode == "" && res.Errors != 0 {
					t.Fatalf("errors %v, want none", res.ErrorsByCode)
				}
				if tc.wantCode != "" && res.ErrorsByCode[tc.wantCode] != res.Requests {
					t.Fatalf("requests %d errors by code %v, want every call to fail with %s", res.Requests, res.ErrorsByCode, tc.wantCode)
				}
			})
		}
	}
	if err := grpcdriver.SetRawCall(&loadgen.Config{}, grpcdriver.RawCall{Path: "NoService"}); err == nil {
		t.Error("a path without a service was accepted")
	}
}
