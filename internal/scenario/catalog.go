package scenario

import (
	"fmt"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/protobench/protobench/internal/contract"
)

// Target names: one per server image.
const (
	TargetGRPC       = "grpc"
	TargetREST       = "rest"
	TargetNetRPC     = "netrpc"
	TargetZeroMQ     = "zeromq"
	TargetPythonGRPC = "python-grpc"
)

// Targets lists every server a scenario may name, in the order the documentation uses.
var Targets = []string{TargetGRPC, TargetREST, TargetNetRPC, TargetZeroMQ, TargetPythonGRPC}

// Tool names: protobench is our own generator, the others are cross-checks.
const (
	ToolProtobench = "protobench"
	ToolGHZ        = "ghz"
	ToolWrk        = "wrk"
	ToolWrk2       = "wrk2"
	ToolK6         = "k6"
)

// Tools lists every load tool a scenario may name; the first one is the default.
var Tools = []string{ToolProtobench, ToolGHZ, ToolWrk, ToolWrk2, ToolK6}

// Load models.
const (
	ModelClosed = "closed" // connections × concurrency requests in flight, back to back
	ModelOpen   = "open"   // a constant arrival rate, latency counted from the intended send time
)

// MethodPublish is the ZeroMQ-only method that makes the server publish its payload on PUB.
const MethodPublish = "Publish"

// ZeroMQ client patterns (the server side is ROUTER, PULL and PUB).
const (
	PatternDealer = "dealer"
	PatternReq    = "req"
	PatternPush   = "push"
	PatternSub    = "sub"
)

// Patterns lists the ZeroMQ patterns; the first one is the default for target zeromq.
var Patterns = []string{PatternDealer, PatternReq, PatternPush, PatternSub}

// toolInfo says what a tool can drive. It mirrors what the adapters' Check accepts, so that a
// scenario fails when it is loaded rather than when its step comes up an hour into the run.
type toolInfo struct {
	targets map[string]bool
	open    bool // supports a constant arrival rate
	closed  bool // supports the closed model
	mix     bool // supports a weighted mix of methods in one step
	why     string
}

var toolCatalog = map[string]toolInfo{
	ToolProtobench: {targets: set(Targets...), open: true, closed: true, mix: true},
	ToolGHZ: {targets: set(TargetGRPC, TargetPythonGRPC), open: true, closed: true,
		why: "ghz speaks gRPC only"},
	ToolWrk: {targets: set(TargetREST), closed: true,
		why: "wrk speaks HTTP only and is closed-loop (Debian's wrk has no -R)"},
	// wrk2 runs only where its image could be built (it needs GitHub); elsewhere its runs fail
	// with that reason and the rest of the scenario goes on.
	ToolWrk2: {targets: set(TargetREST), open: true,
		why: "wrk2 speaks HTTP only and always paces requests (-R)"},
	ToolK6: {targets: set(TargetREST, TargetGRPC, TargetPythonGRPC), open: true, closed: true,
		why: "k6 speaks HTTP and gRPC only"},
}

// methodsByTarget lists the contract methods each server implements.
var methodsByTarget = map[string]map[string]bool{
	TargetGRPC:       set(contract.MethodEcho, contract.MethodGetUser, contract.MethodMultiply, contract.MethodDivide, contract.MethodEchoStream),
	TargetPythonGRPC: set(contract.MethodEcho, contract.MethodGetUser, contract.MethodMultiply, contract.MethodDivide, contract.MethodEchoStream),
	TargetREST:       set(contract.MethodEcho, contract.MethodGetUser, contract.MethodMultiply, contract.MethodDivide),
	TargetNetRPC:     set(contract.MethodEcho, contract.MethodGetUser, contract.MethodMultiply, contract.MethodDivide),
	TargetZeroMQ:     set(contract.MethodEcho, contract.MethodGetUser, contract.MethodMultiply, contract.MethodDivide, MethodPublish),
}

// allMethods is every method name any target accepts, for error messages.
var allMethods = append(append([]string{}, contract.Methods...), MethodPublish)

// payloadMethods are the methods whose request carries payload_bytes.
var payloadMethods = set(contract.MethodEcho, contract.MethodEchoStream, MethodPublish)

// knobKind is how a knob's value is checked.
type knobKind int

const (
	knobInt knobKind = iota
	knobBool
	knobSize
	knobDuration
	knobEnum
)

// knobSpec describes one server knob: how its value is checked and the environment variable the
// server reads it from. Scenario knob names are short and per target; the variables are the
// servers' own (see each server's --help), so adding a knob here is all a new server flag needs.
type knobSpec struct {
	env   string
	kind  knobKind
	min   int64
	enum  []string
	about string
}

// commonKnobs apply to every server.
var commonKnobs = map[string]knobSpec{
	"max_payload_bytes": {env: "PROTOBENCH_MAX_PAYLOAD_BYTES", kind: knobSize, min: 1, about: "largest request the server accepts"},
}

// knobsByTarget lists the knobs each server understands beyond commonKnobs.
var knobsByTarget = map[string]map[string]knobSpec{
	TargetGRPC: {
		"max_concurrent_streams": {env: "PROTOBENCH_GRPC_MAX_CONCURRENT_STREAMS", kind: knobInt, min: 1, about: "HTTP/2 streams per connection (grpc.MaxConcurrentStreams)"},
		"read_buffer_bytes":      {env: "PROTOBENCH_GRPC_READ_BUFFER_BYTES", kind: knobSize, min: 0, about: "grpc.ReadBufferSize"},
		"write_buffer_bytes":     {env: "PROTOBENCH_GRPC_WRITE_BUFFER_BYTES", kind: knobSize, min: 0, about: "grpc.WriteBufferSize"},
	},
	TargetPythonGRPC: {
		"mode":    {env: "PROTOBENCH_PY_MODE", kind: knobEnum, enum: []string{"sync", "aio"}, about: "thread-pool server (sync) or asyncio server (aio)"},
		"gzip":    {env: "PROTOBENCH_PY_GZIP", kind: knobBool, about: "compress every response with gzip"},
		"threads": {env: "PROTOBENCH_PY_THREADS", kind: knobInt, min: 1, about: "thread-pool size in sync mode"},
	},
	TargetREST: {
		"idle_timeout":        {env: "PROTOBENCH_HTTP_IDLE_TIMEOUT", kind: knobDuration, about: "http.Server.IdleTimeout"},
		"read_header_timeout": {env: "PROTOBENCH_HTTP_READ_HEADER_TIMEOUT", kind: knobDuration, about: "http.Server.ReadHeaderTimeout"},
	},
	TargetNetRPC: {},
	TargetZeroMQ: {
		"sndhwm":     {env: "PROTOBENCH_ZMQ_SNDHWM", kind: knobInt, min: 0, about: "send high-water mark in messages (0 = unlimited)"},
		"rcvhwm":     {env: "PROTOBENCH_ZMQ_RCVHWM", kind: knobInt, min: 0, about: "receive high-water mark in messages (0 = unlimited)"},
		"io_threads": {env: "PROTOBENCH_ZMQ_IO_THREADS", kind: knobInt, min: 1, about: "libzmq I/O threads"},
	},
}

// knobSpecFor returns the spec of knob name on target.
func knobSpecFor(target, name string) (knobSpec, bool) {
	if k, ok := commonKnobs[name]; ok {
		return k, true
	}
	k, ok := knobsByTarget[target][name]
	return k, ok
}

// knobNames lists the knobs target accepts, sorted.
func knobNames(target string) []string {
	var names []string
	for n := range commonKnobs {
		names = append(names, n)
	}
	for n := range knobsByTarget[target] {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// KnobEnv returns the environment variable and value that carry a knob to target's server;
// ok is false for a knob the target does not have.
func KnobEnv(target, name, value string) (env, envValue string, ok bool) {
	spec, ok := knobSpecFor(target, name)
	if !ok {
		return "", "", false
	}
	if spec.kind == knobBool {
		// The servers read booleans as 1 or 0, the form every language parses the same way.
		if value == "true" {
			return spec.env, "1", true
		}
		return spec.env, "0", true
	}
	return spec.env, value, true
}

// check validates a knob's raw scalar text and returns its canonical string form.
func (k knobSpec) check(raw string) (string, error) {
	switch k.kind {
	case knobInt:
		v, err := strconv.ParseInt(strings.ReplaceAll(raw, "_", ""), 10, 64)
		if err != nil || v < k.min {
			return "", fmt.Errorf("expected an integer >= %d, got %q", k.min, clip(raw))
		}
		return strconv.FormatInt(v, 10), nil
	case knobBool:
		v, err := strconv.ParseBool(raw)
		if err != nil {
			return "", fmt.Errorf("expected true or false, got %q", clip(raw))
		}
		return strconv.FormatBool(v), nil
	case knobSize:
		v, err := ParseSize(raw)
		if err != nil || v < k.min {
			return "", fmt.Errorf("expected a size such as 16MiB, got %q", clip(raw))
		}
		return strconv.FormatInt(v, 10), nil
	case knobDuration:
		v, err := time.ParseDuration(raw)
		if err != nil || v < 0 || v > maxDuration {
			return "", fmt.Errorf("expected a duration such as 30s, got %q", clip(raw))
		}
		return v.String(), nil
	case knobEnum:
		for _, e := range k.enum {
			if raw == e {
				return raw, nil
			}
		}
		return "", fmt.Errorf("expected one of %s, got %q", strings.Join(k.enum, ", "), clip(raw))
	}
	return "", fmt.Errorf("unsupported knob")
}

func set(xs ...string) map[string]bool {
	m := make(map[string]bool, len(xs))
	for _, x := range xs {
		m[x] = true
	}
	return m
}

func contains(xs []string, x string) bool {
	for _, y := range xs {
		if y == x {
			return true
		}
	}
	return false
}
