package protoreq

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"google.golang.org/protobuf/proto"

	"github.com/protobench/protobench/internal/contract/benchpb"
	"github.com/protobench/protobench/internal/repo"
)

// benchProto copies the contract's .proto under another name in a folder of its own, as a user
// would hand in a file of theirs.
func benchProto(t *testing.T) string {
	t.Helper()
	root, err := repo.Root()
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(root, "proto", "protobench", "v1", "bench.proto"))
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "users", "service.proto")
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// The bytes from JSON through the compiled file equal those of the generated code.
func TestBuildMatchesGeneratedCode(t *testing.T) {
	file := benchProto(t)
	body := filepath.Join(filepath.Dir(file), "divide.json")
	if err := os.WriteFile(body, []byte(`{"a": "7", "b": 2}`), 0o644); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		method, body string
		want         proto.Message
		path         string
	}{
		{"protobench.v1.Bench/GetUser", `{"id": 42}`, &benchpb.GetUserRequest{Id: 42}, "/protobench.v1.Bench/GetUser"},
		{"/protobench.v1.Bench/Echo", `{"payload": "aGVsbG8="}`, &benchpb.EchoRequest{Payload: []byte("hello")}, "/protobench.v1.Bench/Echo"},
		{"protobench.v1.Bench/Divide", "@" + body, &benchpb.ArithRequest{A: 7, B: 2}, "/protobench.v1.Bench/Divide"},
		{"protobench.v1.Bench/Multiply", "", &benchpb.ArithRequest{}, "/protobench.v1.Bench/Multiply"},
	}
	for _, tc := range tests {
		t.Run(tc.method, func(t *testing.T) {
			call, err := Build(file, tc.method, tc.body)
			if err != nil {
				t.Fatal(err)
			}
			want, err := proto.MarshalOptions{Deterministic: true}.Marshal(tc.want)
			if err != nil {
				t.Fatal(err)
			}
			if call.Path != tc.path || string(call.Request) != string(want) {
				t.Errorf("call %s %x, want %s %x", call.Path, call.Request, tc.path, want)
			}
			if got := string(call.Input); got != string(tc.want.ProtoReflect().Descriptor().FullName()) {
				t.Errorf("input type %s, want %s", got, tc.want.ProtoReflect().Descriptor().FullName())
			}
		})
	}
}

// Imports resolve against the file's folder, then --grpc-import-path, then the well-known types.
func TestBuildResolvesImports(t *testing.T) {
	dir := t.TempDir()
	shared := filepath.Join(dir, "shared")
	files := map[string]string{
		filepath.Join(shared, "acme", "types.proto"): `syntax = "proto3"; package acme; message Money { string currency = 1; int64 units = 2; }`,
		filepath.Join(dir, "svc", "order.proto"): `syntax = "proto3"; package acme.orders;
import "acme/types.proto";
import "google/protobuf/timestamp.proto";
message PlaceRequest { acme.Money price = 1; google.protobuf.Timestamp at = 2; }
message PlaceReply {}
service Orders { rpc Place(PlaceRequest) returns (PlaceReply); }`,
	}
	for path, src := range files {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(src), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	call, err := Build(filepath.Join(dir, "svc", "order.proto"), "acme.orders.Orders/Place",
		`{"price": {"currency": "EUR", "units": 5}, "at": "2026-01-01T00:00:00Z"}`, shared)
	if err != nil {
		t.Fatal(err)
	}
	if call.Path != "/acme.orders.Orders/Place" || len(call.Request) == 0 {
		t.Errorf("call %s %x", call.Path, call.Request)
	}
	if _, err := Build(filepath.Join(dir, "svc", "order.proto"), "acme.orders.Orders/Place", "{}"); err == nil || !strings.Contains(err.Error(), "acme/types.proto") {
		t.Errorf("without the import path: %v, want an error naming acme/types.proto", err)
	}
}

func TestBuildErrorsSayWhatAndWhere(t *testing.T) {
	file := benchProto(t)
	broken := filepath.Join(t.TempDir(), "broken.proto")
	if err := os.WriteFile(broken, []byte("syntax = \"proto3\";\npackage x;\nmessage M {\n  int64 id = ;\n}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name, file, method, body string
		want                     []string
	}{
		{"missing file", filepath.Join(t.TempDir(), "nope.proto"), "a.B/C", "", []string{"--grpc-proto", "nope.proto", "no such file"}},
		{"syntax error", broken, "x.S/M", "", []string{"broken.proto:4:"}},
		{"malformed call", file, "GetUser", "", []string{"--grpc-call", "package.Service/Method"}},
		{"unknown service", file, "protobench.v1.Users/GetUser", "", []string{"no service protobench.v1.Users", "protobench.v1.Bench"}},
		{"unknown method", file, "protobench.v1.Bench/Fetch", "", []string{"no method Fetch", "GetUser"}},
		{"streaming method", file, "protobench.v1.Bench/EchoStream", "", []string{"streaming"}},
		{"unknown field", file, "protobench.v1.Bench/GetUser", `{"user_id": 1}`, []string{"--grpc-data", "protobench.v1.GetUserRequest", "user_id"}},
		{"not JSON", file, "protobench.v1.Bench/GetUser", `id=1`, []string{"--grpc-data", "protobench.v1.GetUserRequest"}},
		{"wrong type", file, "protobench.v1.Bench/GetUser", `{"id": "forty-two"}`, []string{"--grpc-data", "id"}},
		{"missing body file", file, "protobench.v1.Bench/GetUser", "@" + filepath.Join(t.TempDir(), "body.json"), []string{"--grpc-data @", "body.json"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Build(tc.file, tc.method, tc.body)
			if err == nil {
				t.Fatal("no error")
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not say %q", err, w)
				}
			}
		})
	}
}

func TestFlagsNeedTheProto(t *testing.T) {
	if c, err := (&Flags{}).Call(); c != nil || err != nil {
		t.Errorf("no flags: %v %v, want no call", c, err)
	}
	if _, err := (&Flags{Method: "a.B/C"}).Call(); err == nil || !strings.Contains(err.Error(), "need --grpc-proto") {
		t.Errorf("call without proto: %v", err)
	}
	if _, err := (&Flags{Proto: "x.proto"}).Call(); err == nil || !strings.Contains(err.Error(), "--grpc-call is required") {
		t.Errorf("proto without call: %v", err)
	}
}
