package ghz

import (
	"testing"
	"time"

	"github.com/protobench/protobench/internal/tool"
	"github.com/protobench/protobench/internal/tool/tooltest"
)

// golden holds real ghz runs: stdout is kept gzipped because ghz's per-call details make it large.
var golden = tooltest.Golden{
	Adapter:    Adapter{},
	ProgramEnv: "GHZ",
	ServerEnv:  map[string]string{"grpc": "GRPC_ADDR", "grpc-small": "GRPC_SMALL_ADDR"},
	GzipStdout: true,
}

// goldenCases run against "grpc" (a normal server), "grpc-small" (a server started with
// --max-payload-bytes 512, so 1 KiB Echo calls fail) or nothing at all (tooltest.Unreachable).
var goldenCases = []tooltest.Case{
	{Name: "getuser-closed", Server: "grpc", Inv: tool.Invocation{
		Target: "grpc", Scheme: "grpc", Method: "GetUser", Model: "closed",
		Connections: 2, Concurrency: 2, Duration: 2 * time.Second,
	}},
	{Name: "getuser-open", Server: "grpc", Inv: tool.Invocation{
		Target: "grpc", Scheme: "grpc", Method: "GetUser", Model: "open",
		Connections: 2, Concurrency: 2, RatePerSec: 500, Duration: 2 * time.Second,
	}},
	{Name: "echo-1024-closed", Server: "grpc", Inv: tool.Invocation{
		Target: "grpc", Scheme: "grpc", Method: "Echo", Model: "closed",
		Connections: 1, Concurrency: 2, PayloadBytes: 1024, Duration: 2 * time.Second,
	}},
	{Name: "echo-too-large-open", Server: "grpc-small", Inv: tool.Invocation{
		Target: "grpc", Scheme: "grpc", Method: "Echo", Model: "open",
		Connections: 1, Concurrency: 2, RatePerSec: 200, PayloadBytes: 1024, Duration: 2 * time.Second,
	}},
	{Name: "unreachable-open", Server: tooltest.Unreachable, Inv: tool.Invocation{
		Target: "grpc", Scheme: "grpc", Method: "GetUser", Model: "open",
		Connections: 1, Concurrency: 1, RatePerSec: 50, Duration: time.Second,
	}},
}

// TestCaptureGolden regenerates testdata/ by running the real ghz with Args against real servers.
// It only runs when asked:
//
//	PROTOBENCH_CAPTURE=1 GHZ=$(which ghz) GRPC_ADDR=127.0.0.1:50151 GRPC_SMALL_ADDR=127.0.0.1:50152 \
//	  go test -count=1 -run TestCaptureGolden ./internal/tool/ghz
//
// where GRPC_ADDR is `go run ./servers/grpc --listen ...` and GRPC_SMALL_ADDR the same server with
// --max-payload-bytes 512. The image's proto path is replaced by the repository's proto/.
func TestCaptureGolden(t *testing.T) { golden.Capture(t, goldenCases) }
