package k6

import (
	"testing"
	"time"

	"github.com/protobench/protobench/internal/tool"
	"github.com/protobench/protobench/internal/tool/tooltest"
)

// golden holds real k6 runs; k6's result is the summary export it writes under RawDir, kept in
// each case's files/.
var golden = tooltest.Golden{
	Adapter:    Adapter{},
	ProgramEnv: "K6",
	ServerEnv: map[string]string{
		"rest": "REST_ADDR", "rest-small": "REST_SMALL_ADDR",
		"grpc": "GRPC_ADDR", "grpc-small": "GRPC_SMALL_ADDR",
	},
	RawPrefix: goldenRawPrefix,
}

// goldenRawPrefix is the RawPrefix of every golden invocation.
const goldenRawPrefix = "k6"

// goldenCases run against "rest"/"grpc" (normal servers), "rest-small"/"grpc-small" (servers
// started with --max-payload-bytes 512, so 1 KiB Echo requests fail) or nothing at all
// (tooltest.Unreachable).
var goldenCases = []tooltest.Case{
	{Name: "http-getuser-closed", Server: "rest", Inv: tool.Invocation{
		Target: "rest", Scheme: "http", Method: "GetUser", Model: "closed",
		Connections: 4, Concurrency: 1, Duration: 2 * time.Second,
	}},
	{Name: "http-echo-1024-open", Server: "rest", Inv: tool.Invocation{
		Target: "rest", Scheme: "http", Method: "Echo", Model: "open",
		Connections: 2, Concurrency: 1, RatePerSec: 300, PayloadBytes: 1024, Duration: 2 * time.Second,
	}},
	{Name: "http-echo-too-large-closed", Server: "rest-small", Inv: tool.Invocation{
		Target: "rest", Scheme: "http", Method: "Echo", Model: "closed",
		Connections: 1, Concurrency: 1, PayloadBytes: 1024, Duration: 2 * time.Second,
	}},
	{Name: "grpc-getuser-closed", Server: "grpc", Inv: tool.Invocation{
		Target: "grpc", Scheme: "grpc", Method: "GetUser", Model: "closed",
		Connections: 2, Concurrency: 1, Duration: 2 * time.Second,
	}},
	{Name: "grpc-multiply-open", Server: "grpc", Inv: tool.Invocation{
		Target: "grpc", Scheme: "grpc", Method: "Multiply", Model: "open",
		Connections: 2, Concurrency: 1, RatePerSec: 200, Duration: 2 * time.Second,
	}},
	{Name: "grpc-echo-too-large-closed", Server: "grpc-small", Inv: tool.Invocation{
		Target: "grpc", Scheme: "grpc", Method: "Echo", Model: "closed",
		Connections: 1, Concurrency: 1, PayloadBytes: 1024, Duration: 2 * time.Second,
	}},
	{Name: "grpc-unreachable-closed", Server: tooltest.Unreachable, Inv: tool.Invocation{
		Target: "grpc", Scheme: "grpc", Method: "GetUser", Model: "closed",
		Connections: 1, Concurrency: 1, Duration: time.Second,
	}},
}

// TestCaptureGolden regenerates testdata/ by running the real k6 with Args against real servers.
// It only runs when asked:
//
//	PROTOBENCH_CAPTURE=1 K6=$(which k6) REST_ADDR=... REST_SMALL_ADDR=... GRPC_ADDR=... GRPC_SMALL_ADDR=... \
//	  go test -count=1 -run TestCaptureGolden ./internal/tool/k6
//
// where the *_SMALL servers run with --max-payload-bytes 512. The image's script and proto
// directories are replaced by the repository's, RawDir by a temporary directory.
func TestCaptureGolden(t *testing.T) { golden.Capture(t, goldenCases) }
