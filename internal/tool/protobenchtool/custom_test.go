package protobenchtool

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/protobench/protobench/internal/tool"
)

// TestCustomRequestArgs: a custom target's own request reaches the generator through its
// --grpc-* and --http-* flags, in place of --method.
func TestCustomRequestArgs(t *testing.T) {
	base := tool.Invocation{
		Target: "mine", Method: "GetUser", Model: "closed", Connections: 1, Concurrency: 2,
		Duration: 2 * time.Second, RawDir: "/raw", RawPrefix: "001",
	}
	cases := []struct {
		name, scheme string
		req          tool.Request
		want         []string
	}{
		{"grpc", "grpc", tool.Request{ProtoFile: "/raw/p/s.proto", Call: "a.v1.S/Get", Data: "{}"},
			[]string{"--grpc-proto", "/raw/p/s.proto", "--grpc-call", "a.v1.S/Get", "--grpc-data", "{}"}},
		{"http", "http", tool.Request{HTTPMethod: "POST", HTTPPath: "/v1/orders", HTTPHeaders: []string{"A: b", "C: d"}, HTTPBody: "x"},
			[]string{"--http-method", "POST", "--http-path", "/v1/orders", "--http-header", "A: b", "--http-header", "C: d", "--http-body", "x"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			inv := base
			inv.Scheme, inv.Address, inv.Request = c.scheme, "mine:1", &c.req
			args := Adapter{}.Args(inv)
			joined := strings.Join(args, "\x00")
			if !strings.Contains(joined, strings.Join(c.want, "\x00")) {
				t.Errorf("args %q lack %q", args, c.want)
			}
			if slices.Contains(args, "--method") {
				t.Errorf("args %q name --method beside the request", args)
			}
		})
	}
}
