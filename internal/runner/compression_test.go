package runner

import (
	"testing"

	"github.com/protobench/protobench/internal/scenario"
	"github.com/protobench/protobench/internal/targets"
	"github.com/protobench/protobench/internal/tool"
	"github.com/protobench/protobench/internal/tool/h2load"
	"github.com/protobench/protobench/internal/tool/k6"
	"github.com/protobench/protobench/internal/tool/protobenchtool"
)

// Every reference server is told the step's compression; a custom target, which reads no
// variable of ours, is not.
func TestServerEnvironmentCompression(t *testing.T) {
	for _, c := range []string{scenario.CompressionNone, scenario.CompressionGzip} {
		if env := serverEnvironment(scenario.Run{Target: "connect-grpc", Compression: c}); env[targets.CompressionEnv] != c {
			t.Errorf("compression %s: env %v", c, env)
		}
	}
	own := serverEnvironment(scenario.Run{Target: "mine", Compression: scenario.CompressionNone, Custom: &scenario.CustomTarget{}})
	if _, set := own[targets.CompressionEnv]; set {
		t.Errorf("a custom target got %s: %v", targets.CompressionEnv, own)
	}
}

// The runner's last check before a tool starts: gzip only where the tool declares it.
func TestCheckCompression(t *testing.T) {
	gen, h2, k := protobenchtool.Adapter{}, h2load.Adapter{}, k6.Adapter{}
	for _, tc := range []struct {
		name string
		c    tool.Capabilities
		inv  tool.Invocation
		ok   bool
	}{
		{"protobench", gen.Capabilities(), tool.Invocation{Scheme: targets.GRPC, Compression: "gzip"}, true},
		{"protobench", gen.Capabilities(), tool.Invocation{Scheme: targets.HTTP, Compression: "gzip"}, true},
		{"protobench", gen.Capabilities(), tool.Invocation{Scheme: targets.NetRPC, Compression: "gzip"}, false},
		{"h2load", h2.Capabilities(), tool.Invocation{Scheme: targets.GRPC, Compression: "gzip"}, true},
		{"h2load", h2.Capabilities(), tool.Invocation{Scheme: targets.Connect, Compression: "gzip"}, false},
		{"k6", k.Capabilities(), tool.Invocation{Scheme: targets.GRPC, Compression: "gzip"}, false},
		{"k6", k.Capabilities(), tool.Invocation{Scheme: targets.GRPC, Compression: "none"}, true},
		{"h2load", h2.Capabilities(), tool.Invocation{Scheme: targets.GRPC, Compression: "br"}, false},
	} {
		if err := tool.CheckCompression(tc.name, tc.c, tc.inv); (err == nil) != tc.ok {
			t.Errorf("%s %s %s: %v, want ok %v", tc.name, tc.inv.Scheme, tc.inv.Compression, err, tc.ok)
		}
	}
}
