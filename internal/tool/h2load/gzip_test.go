package h2load

import (
	"bytes"
	"compress/gzip"
	"encoding/binary"
	"io"
	"slices"
	"strings"
	"testing"

	"google.golang.org/protobuf/proto"

	"github.com/protobench/protobench/internal/contract"
	"github.com/protobench/protobench/internal/contract/benchpb"
	"github.com/protobench/protobench/internal/tool"
)

// Under compression gzip the body file is one compressed gRPC message (flag 1) of the contract's
// request, and the headers say so; under none neither header is sent.
func TestGRPCGzip(t *testing.T) {
	inv := with(func(i *tool.Invocation) { i.Method, i.PayloadBytes, i.Compression = "Echo", 1000, "gzip" })
	b := Adapter{}.InputFiles(inv)[BodyFile(inv)]
	if len(b) < 5 || b[0] != 1 || int(binary.BigEndian.Uint32(b[1:5])) != len(b)-5 {
		t.Fatalf("body % x does not start with a compressed gRPC length prefix of its length", b[:min(len(b), 5)])
	}
	zr, err := gzip.NewReader(bytes.NewReader(b[5:]))
	if err != nil {
		t.Fatal(err)
	}
	raw, err := io.ReadAll(zr)
	if err != nil {
		t.Fatal(err)
	}
	var req benchpb.EchoRequest
	if err := proto.Unmarshal(raw, &req); err != nil || !bytes.Equal(req.Payload, contract.Payload(1000)) {
		t.Fatalf("inflated body is not the contract's Echo request: %v", err)
	}
	args := strings.Join(Adapter{}.Args(inv), " ")
	for _, h := range []string{"-H grpc-encoding: gzip", "-H grpc-accept-encoding: gzip"} {
		if !strings.Contains(args, h) {
			t.Errorf("args %q lack %q", args, h)
		}
	}
	inv.Compression = "none"
	plain := Adapter{}.Args(inv)
	if slices.ContainsFunc(plain, func(a string) bool { return strings.Contains(a, "encoding") }) {
		t.Errorf("compression none still names an encoding: %q", plain)
	}
}
