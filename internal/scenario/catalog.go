package scenario

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/protobench/protobench/internal/targets"
)

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

// toolInfo says what a tool can drive. It mirrors what the adapters' Check accepts, so that a
// scenario fails when it is loaded rather than when its step comes up an hour into the run.
type toolInfo struct {
	protocols map[string]bool // the targets.Protocols it speaks
	open      bool            // supports a constant arrival rate
	closed    bool            // supports the closed model
	mix       bool            // supports a weighted mix of methods in one step
	why       string
}

var toolCatalog = map[string]toolInfo{
	ToolProtobench: {protocols: set(targets.Protocols...), open: true, closed: true, mix: true},
	ToolGHZ: {protocols: set(targets.GRPC), open: true, closed: true,
		why: "ghz speaks gRPC only"},
	ToolWrk: {protocols: set(targets.HTTP), closed: true,
		why: "wrk speaks HTTP only and is closed-loop (Debian's wrk has no -R)"},
	// wrk2 runs only where its image could be built (it needs GitHub); elsewhere its runs fail
	// with that reason and the rest of the scenario goes on.
	ToolWrk2: {protocols: set(targets.HTTP), open: true,
		why: "wrk2 speaks HTTP only and always paces requests (-R)"},
	ToolK6: {protocols: set(targets.HTTP, targets.GRPC), open: true, closed: true,
		why: "k6 speaks HTTP and gRPC only"},
}

// KnobEnv returns the environment variable and value that carry a knob to target's server;
// ok is false for a knob the target does not have.
func KnobEnv(t targets.Target, name, value string) (env, envValue string, ok bool) {
	spec, ok := t.Knobs[name]
	if !ok {
		return "", "", false
	}
	if spec.Kind == targets.KnobBool {
		// The servers read booleans as 1 or 0, the form every language parses the same way.
		if value == "true" {
			return spec.Env, "1", true
		}
		return spec.Env, "0", true
	}
	return spec.Env, value, true
}

// checkKnob validates a knob's raw scalar text and returns its canonical string form.
func checkKnob(k targets.Knob, raw string) (string, error) {
	switch k.Kind {
	case targets.KnobInt:
		v, err := strconv.ParseInt(strings.ReplaceAll(raw, "_", ""), 10, 64)
		if err != nil || v < k.Min {
			return "", fmt.Errorf("expected an integer >= %d, got %q", k.Min, clip(raw))
		}
		return strconv.FormatInt(v, 10), nil
	case targets.KnobBool:
		v, err := strconv.ParseBool(raw)
		if err != nil {
			return "", fmt.Errorf("expected true or false, got %q", clip(raw))
		}
		return strconv.FormatBool(v), nil
	case targets.KnobSize:
		v, err := ParseSize(raw)
		if err != nil || v < k.Min {
			return "", fmt.Errorf("expected a size such as 16MiB, got %q", clip(raw))
		}
		return strconv.FormatInt(v, 10), nil
	case targets.KnobDuration:
		v, err := time.ParseDuration(raw)
		if err != nil || v < 0 || v > maxDuration {
			return "", fmt.Errorf("expected a duration such as 30s, got %q", clip(raw))
		}
		return v.String(), nil
	case targets.KnobEnum:
		for _, e := range k.Enum {
			if raw == e {
				return raw, nil
			}
		}
		return "", fmt.Errorf("expected one of %s, got %q", strings.Join(k.Enum, ", "), clip(raw))
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
