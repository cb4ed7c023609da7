package wrk

import (
	"testing"
	"time"

	"github.com/protobench/protobench/internal/tool"
	"github.com/protobench/protobench/internal/tool/tooltest"
)

// golden holds real wrk runs.
var golden = tooltest.Golden{
	Adapter:    Adapter{},
	ProgramEnv: "WRK",
	ServerEnv:  map[string]string{"rest": "REST_ADDR", "rest-small": "REST_SMALL_ADDR"},
}

// goldenCases run against "rest" (a normal server), "rest-small" (a server started with
// --max-payload-bytes 512, so 1 KiB Echo requests get 413) or nothing at all
// (tooltest.Unreachable).
var goldenCases = []tooltest.Case{
	{Name: "getuser-closed", Server: "rest", Inv: tool.Invocation{
		Target: "rest", Scheme: "http", Method: "GetUser", Model: "closed",
		Connections: 4, Concurrency: 1, Duration: 2 * time.Second,
	}},
	{Name: "echo-1024-closed", Server: "rest", Inv: tool.Invocation{
		Target: "rest", Scheme: "http", Method: "Echo", Model: "closed",
		Connections: 2, Concurrency: 1, PayloadBytes: 1024, Duration: 2 * time.Second,
	}},
	{Name: "multiply-closed", Server: "rest", Inv: tool.Invocation{
		Target: "rest", Scheme: "http", Method: "Multiply", Model: "closed",
		Connections: 1, Concurrency: 2, Duration: 2 * time.Second,
	}},
	{Name: "echo-too-large-closed", Server: "rest-small", Inv: tool.Invocation{
		Target: "rest", Scheme: "http", Method: "Echo", Model: "closed",
		Connections: 1, Concurrency: 1, PayloadBytes: 1024, Duration: 2 * time.Second,
	}},
	{Name: "unreachable-closed", Server: tooltest.Unreachable, Inv: tool.Invocation{
		Target: "rest", Scheme: "http", Method: "GetUser", Model: "closed",
		Connections: 1, Concurrency: 1, Duration: time.Second,
	}},
}

// TestCaptureGolden regenerates testdata/ by running the real wrk with Args against real servers.
// It only runs when asked:
//
//	PROTOBENCH_CAPTURE=1 WRK=$(which wrk) REST_ADDR=127.0.0.1:8080 REST_SMALL_ADDR=127.0.0.1:8081 \
//	  go test -count=1 -run TestCaptureGolden ./internal/tool/wrk
//
// where REST_ADDR is `go run ./servers/rest --listen ...` and REST_SMALL_ADDR the same server with
// --max-payload-bytes 512. The image's script path is replaced by this package's report.lua.
func TestCaptureGolden(t *testing.T) { golden.Capture(t, goldenCases) }
