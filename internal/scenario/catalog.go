package scenario

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/protobench/protobench/internal/targets"
	"github.com/protobench/protobench/internal/tool"
	// Every adapter registers itself: the tools a scenario may name are the registered ones.
	_ "github.com/protobench/protobench/internal/tool/all"
)

// ToolProtobench is our own generator, the default tool; every other tool is a cross-check, and
// what each can drive is its adapter's to say (tool.Capabilities).
const ToolProtobench = "protobench"

// Tools lists every load tool a scenario may name, the registered adapters; the first one,
// protobench, is the default.
var Tools = toolNames()

func toolNames() []string {
	names := []string{ToolProtobench}
	for _, n := range tool.Names() {
		if n != ToolProtobench {
			names = append(names, n)
		}
	}
	return names
}

// Load models.
const (
	ModelClosed = "closed" // connections × concurrency requests in flight, back to back
	ModelOpen   = "open"   // a constant arrival rate, latency counted from the intended send time
)

// capabilities is what the named tool declares it can drive, so that a scenario fails when it is
// loaded rather than when its step comes up an hour into the run.
func capabilities(name string) (tool.Capabilities, bool) {
	a, ok := tool.Lookup(name)
	if !ok {
		return tool.Capabilities{}, false
	}
	return a.Capabilities(), true
}

// toolsThatRun lists, for a message, the tools that run model.
func toolsThatRun(model string) string {
	var out []string
	for _, n := range Tools {
		if c, _ := capabilities(n); c.Runs(model) {
			out = append(out, n)
		}
	}
	return strings.Join(out, ", ")
}

// KnobEnv returns the environment variable and value that carry a knob to target's server;
// ok is false for a knob the target does not have, and for a client knob, which reaches no server.
func KnobEnv(t targets.Target, name, value string) (env, envValue string, ok bool) {
	spec, ok := t.Knobs[name]
	if !ok || spec.Client {
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
		if k.Max > 0 && v > k.Max {
			return "", fmt.Errorf("expected an integer from %d to %d, got %q", k.Min, k.Max, clip(raw))
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
		if k.Max > 0 && int64(v) > k.Max {
			return "", fmt.Errorf("expected a duration from 0 to %s, got %q", time.Duration(k.Max), clip(raw))
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
