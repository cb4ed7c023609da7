package runner

import (
	"slices"
	"strings"
	"testing"

	"github.com/protobench/protobench/internal/tool"
	"github.com/protobench/protobench/internal/tool/protobenchtool"
)

func TestSplitter(t *testing.T) {
	a := protobenchtool.Adapter{}
	inv := tool.Invocation{Target: "grpc", Address: "grpc:50051", Scheme: "grpc", Method: "Echo", Model: "closed",
		Connections: 4, Concurrency: 2, PayloadBytes: 64, RawDir: "/raw", RawPrefix: "r1", Duration: 2e9}
	parts := splitter(a, inv)
	if parts == nil {
		t.Fatal("protobench's generator cannot split")
	}
	args, merge, err := parts(2)
	if err != nil || len(args) != 2 || merge == nil {
		t.Fatalf("split in 2: %v %v", args, err)
	}
	if !slices.ContainsFunc(args[1], func(s string) bool { return strings.Contains(s, "r1.part2") }) {
		t.Errorf("part 2 writes its own files: %q", args[1])
	}
	if _, _, err := parts(9); err == nil {
		t.Error("8 requests in flight split among 9 clients")
	}
	if ghz, ok := tool.Lookup("ghz"); ok && splitter(ghz, inv) != nil {
		t.Error("ghz's results cannot be merged, so it must not split")
	}
}
