package ghz

import (
	"strings"
	"testing"
	"time"

	"github.com/protobench/protobench/internal/tool"
)

// TestCustomRequestArgs: a custom target's own proto, call and request go to ghz's --proto,
// --call and -d, with the proto's folder as the import path, and no contract call data file.
func TestCustomRequestArgs(t *testing.T) {
	inv := tool.Invocation{
		Target: "my-python", Address: "my-python:50051", Scheme: "grpc", Method: "GetUser", Model: "closed",
		Connections: 2, Concurrency: 4, Duration: 4 * time.Second, RawDir: "/raw", RawPrefix: "001",
		Request: &tool.Request{ProtoFile: "/raw/custom-my-python/service.proto", Call: "protobench.v1.Bench/GetUser", Data: `{"id": 42}`},
	}
	a := Adapter{}
	if err := a.Check(inv); err != nil {
		t.Fatal(err)
	}
	got := strings.Join(a.Args(inv), " ")
	for _, want := range []string{
		"--import-paths /raw/custom-my-python --proto service.proto --call protobench.v1.Bench/GetUser -d {\"id\": 42}",
		"my-python:50051",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("args %q lack %q", got, want)
		}
	}
	if strings.Contains(got, ProtoFile) {
		t.Errorf("args %q still name the contract's proto", got)
	}
	if files := a.InputFiles(inv); len(files) != 0 {
		t.Errorf("input files %v for a custom request", files)
	}
	inv.Request = &tool.Request{Call: "a.B/C"}
	if err := a.Check(inv); err == nil {
		t.Error("a custom request without a proto passed Check")
	}
}
