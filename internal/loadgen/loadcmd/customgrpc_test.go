package loadcmd

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/protobench/protobench/internal/loadgen"
	"github.com/protobench/protobench/internal/repo"
)

// TestCustomGRPCCall drives our gRPC server as a user's own service would be driven: the
// contract's .proto handed in as a file under another name, a method and a JSON body. Divide by
// zero is refused by the server with INVALID_ARGUMENT, so the errors show that the body, not a
// built-in request, reached it.
func TestCustomGRPCCall(t *testing.T) {
	root, err := repo.Root()
	if err != nil {
		t.Fatal(err)
	}
	src, err := os.ReadFile(filepath.Join(root, "proto", "protobench", "v1", "bench.proto"))
	if err != nil {
		t.Fatal(err)
	}
	protoFile := filepath.Join(t.TempDir(), "theirs", "calc.proto")
	if err := os.MkdirAll(filepath.Dir(protoFile), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(protoFile, src, 0o644); err != nil {
		t.Fatal(err)
	}
	// The server runs as a process of its own, as it does for a user.
	_, addr := startServerProcess(t, buildServer(t, "grpc"))
	tests := []struct {
		name, data string
		extra      []string
		wantErrors bool
	}{
		{"lean client", `{"a": 7, "b": 2}`, nil, false},
		{"grpc-go client", `{"a": 7, "b": 2}`, []string{"--grpc-client", "grpc-go"}, false},
		{"open model", `{"a": 7, "b": 2}`, []string{"--rate", "200"}, false},
		{"the body reaches the server", `{"a": 7, "b": 0}`, nil, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			out := filepath.Join(t.TempDir(), "r.json")
			args := append([]string{"--target", "grpc://" + addr, "--grpc-proto", protoFile,
				"--grpc-call", "protobench.v1.Bench/Divide", "--grpc-data", tc.data,
				"--connections", "1", "--concurrency", "4", "--duration", "1s", "--warmup", "200ms", "--out", out}, tc.extra...)
			var stdout, stderr bytes.Buffer
			code := Command(context.Background(), args, &stdout, &stderr)
			b, err := os.ReadFile(out)
			if err != nil {
				t.Fatalf("exit %d, no result: %v; stderr: %s", code, err, stderr.String())
			}
			var res loadgen.Result
			if err := json.Unmarshal(b, &res); err != nil {
				t.Fatal(err)
			}
			if res.Method != "protobench.v1.Bench/Divide" {
				t.Errorf("method %q, want the custom call", res.Method)
			}
			if !tc.wantErrors {
				if code != loadgen.ExitOK || res.Requests == 0 || res.Errors != 0 {
					t.Fatalf("exit %d, %d requests, errors %v; stderr: %s", code, res.Requests, res.ErrorsByCode, stderr.String())
				}
				return
			}
			if res.Requests == 0 || res.Errors != res.Requests || res.ErrorsByCode["grpc:InvalidArgument"] != res.Errors {
				t.Errorf("%d requests, errors %v: want every one refused with InvalidArgument", res.Requests, res.ErrorsByCode)
			}
		})
	}
}

func TestCustomGRPCCallBadInput(t *testing.T) {
	root, err := repo.Root()
	if err != nil {
		t.Fatal(err)
	}
	protoFile := filepath.Join(root, "proto", "protobench", "v1", "bench.proto")
	tests := []struct {
		name string
		args []string
		want string
	}{
		{"proto on http", []string{"--target", "http://127.0.0.1:1", "--grpc-proto", protoFile}, "only to grpc://"},
		{"call without proto", []string{"--target", "grpc://127.0.0.1:1", "--grpc-call", "protobench.v1.Bench/GetUser"}, "need --grpc-proto"},
		{"method and call", []string{"--target", "grpc://127.0.0.1:1", "--grpc-proto", protoFile, "--grpc-call", "protobench.v1.Bench/GetUser", "--method", "Echo"}, "named by --grpc-call"},
		{"unknown field", []string{"--target", "grpc://127.0.0.1:1", "--grpc-proto", protoFile, "--grpc-call", "protobench.v1.Bench/GetUser", "--grpc-data", `{"uid": 1}`}, `unknown field "uid"`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			if code := Command(context.Background(), tc.args, &stdout, &stderr); code != loadgen.ExitUsage {
				t.Errorf("exit %d, want %d; stderr: %s", code, loadgen.ExitUsage, stderr.String())
			}
			if !strings.Contains(stderr.String(), tc.want) {
				t.Errorf("stderr %q does not say %q", stderr.String(), tc.want)
			}
		})
	}
}
