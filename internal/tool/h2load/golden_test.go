package h2load

import (
	"testing"
	"time"

	"github.com/protobench/protobench/internal/tool"
	"github.com/protobench/protobench/internal/tool/tooltest"
)

// golden holds real h2load runs. Its result is stdout (the summary) and the request log it
// writes under RawDir, kept gzipped since it has a line per request.
var golden = tooltest.Golden{
	Adapter:    Adapter{},
	ProgramEnv: "H2LOAD",
	ServerEnv: map[string]string{
		"grpc": "GRPC_ADDR", "grpc-small": "GRPC_SMALL_ADDR",
		"rest": "REST_ADDR", "rest-small": "REST_SMALL_ADDR",
	},
	RawPrefix: "run",
	GzipFiles: true,
}

const (
	goldenDuration = 500 * time.Millisecond
	goldenWarmup   = 200 * time.Millisecond
)

// goldenCases run against "grpc" and "rest" (normal servers), "grpc-small" and "rest-small" (the
// same servers with --max-payload-bytes 512, so 1 KiB Echo calls fail) or nothing at all.
var goldenCases = []tooltest.Case{
	{Name: "grpc-getuser-closed", Server: "grpc", Inv: tool.Invocation{
		Target: "grpc", Scheme: "grpc", Method: "GetUser", Model: "closed",
		Connections: 2, Concurrency: 4, Warmup: goldenWarmup, Duration: goldenDuration,
	}},
	{Name: "grpc-echo-1024-closed", Server: "grpc", Inv: tool.Invocation{
		Target: "grpc", Scheme: "grpc", Method: "Echo", Model: "closed",
		Connections: 1, Concurrency: 2, PayloadBytes: 1024, Warmup: goldenWarmup, Duration: goldenDuration,
	}},
	{Name: "grpc-echo-too-large-closed", Server: "grpc-small", Inv: tool.Invocation{
		Target: "grpc", Scheme: "grpc", Method: "Echo", Model: "closed",
		Connections: 1, Concurrency: 2, PayloadBytes: 1024, Warmup: goldenWarmup, Duration: goldenDuration,
	}},
	{Name: "rest-h1-getuser-closed", Server: "rest", Inv: tool.Invocation{
		Target: "rest", Scheme: "http", Method: "GetUser", Model: "closed", HTTPVersion: "1.1", Encoding: "json",
		Connections: 4, Concurrency: 1, Warmup: goldenWarmup, Duration: goldenDuration,
	}},
	{Name: "rest-h1-multiply-closed", Server: "rest", Inv: tool.Invocation{
		Target: "rest", Scheme: "http", Method: "Multiply", Model: "closed",
		Connections: 2, Concurrency: 1, Warmup: goldenWarmup, Duration: goldenDuration,
	}},
	{Name: "rest-h1-echo-too-large-closed", Server: "rest-small", Inv: tool.Invocation{
		Target: "rest", Scheme: "http", Method: "Echo", Model: "closed", HTTPVersion: "1.1",
		Connections: 2, Concurrency: 1, PayloadBytes: 1024, Warmup: goldenWarmup, Duration: goldenDuration,
	}},
	{Name: "rest-h2c-getuser-closed", Server: "rest", Inv: tool.Invocation{
		Target: "rest", Scheme: "http", Method: "GetUser", Model: "closed", HTTPVersion: "2", Encoding: "json",
		Connections: 2, Concurrency: 4, Warmup: goldenWarmup, Duration: goldenDuration,
	}},
	{Name: "rest-h2c-protobuf-echo-closed", Server: "rest", Inv: tool.Invocation{
		Target: "rest", Scheme: "http", Method: "Echo", Model: "closed", HTTPVersion: "2", Encoding: "protobuf",
		Connections: 1, Concurrency: 4, PayloadBytes: 512, Warmup: goldenWarmup, Duration: goldenDuration,
	}},
	{Name: "unreachable-closed", Server: tooltest.Unreachable, Inv: tool.Invocation{
		Target: "grpc", Scheme: "grpc", Method: "GetUser", Model: "closed",
		Connections: 1, Concurrency: 1, Duration: goldenDuration,
	}},
}

// TestCaptureGolden regenerates testdata/ by running the real h2load with Args against real
// servers. It only runs when asked:
//
//	PROTOBENCH_CAPTURE=1 H2LOAD=/usr/bin/h2load GRPC_ADDR=127.0.0.1:50151 GRPC_SMALL_ADDR=127.0.0.1:50152 \
//	  REST_ADDR=127.0.0.1:50181 REST_SMALL_ADDR=127.0.0.1:50182 \
//	  go test -count=1 -run TestCaptureGolden ./internal/tool/h2load
//
// where the servers are `go run ./servers/grpc --listen ...` and `go run ./servers/rest --listen
// ...`, the small ones started with --max-payload-bytes 512.
func TestCaptureGolden(t *testing.T) { golden.Capture(t, goldenCases) }
