package targets

// Finding targets in the registry and asking one what it can do: the questions the scenario
// checks, the runner and the generated files put to it (the entries themselves are in
// targets.go).

import (
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/protobench/protobench/internal/contract"
)

// All returns every registered target, in listing order.
func All() []Target { return slices.Clone(all) }

// DriverNeedsCgo marks the protocols whose load-generator driver is built on a C library through
// cgo (ZeroMQ's, on libzmq): the generated driver list links them in only where cgo is on, so a
// host without the library's headers still builds the CLI.
var DriverNeedsCgo = map[string]bool{ZMQ: true}

// Names lists every registered target name, in listing order.
func Names() []string {
	names := make([]string, len(all))
	for i, t := range all {
		names[i] = t.Name
	}
	return names
}

// Lookup returns the registered target called name.
func Lookup(name string) (Target, bool) {
	for _, t := range all {
		if t.Name == name {
			return t, true
		}
	}
	return Target{}, false
}

// IsHTTP reports whether the target speaks HTTP, and so takes an HTTP version and an encoding.
func (t Target) IsHTTP() bool { return OverHTTP[t.Protocol] }

// Streams reports whether the target serves a streaming method.
func (t Target) Streams() bool { return slices.Contains(t.Methods, contract.MethodEchoStream) }

// Implements reports whether the target serves method.
func (t Target) Implements(method string) bool { return slices.Contains(t.Methods, method) }

// Pattern returns the named pattern, or the default one for "".
func (t Target) Pattern(name string) (Pattern, bool) {
	if len(t.Patterns) == 0 {
		return Pattern{}, false
	}
	if name == "" {
		return t.Patterns[0], true
	}
	for _, p := range t.Patterns {
		if p.Name == name {
			return p, true
		}
	}
	return Pattern{}, false
}

// PatternNames lists the target's patterns; the first is the default.
func (t Target) PatternNames() []string {
	names := make([]string, len(t.Patterns))
	for i, p := range t.Patterns {
		names[i] = p.Name
	}
	return names
}

// PatternFor picks the pattern a method runs on when a step names none: the default one if it
// carries method, else the first that does.
func (t Target) PatternFor(method string) string {
	for _, p := range t.Patterns {
		if slices.Contains(p.Methods, method) {
			return p.Name
		}
	}
	if len(t.Patterns) > 0 {
		return t.Patterns[0].Name
	}
	return ""
}

// Multiplexes reports whether one connection of this target's client carries many requests in
// flight: a gRPC channel, an HTTP/2 connection, net/rpc's client and a ZeroMQ DEALER do;
// HTTP/1.1 and a ZeroMQ REQ socket cannot.
func (t Target) Multiplexes(httpVersion, pattern string) bool {
	switch {
	case t.IsHTTP():
		return httpVersion == HTTP2
	case len(t.Patterns) > 0:
		p, ok := t.Pattern(pattern)
		return ok && p.Multiplexes
	}
	return true
}

// KnobNames lists the target's knobs, sorted.
func (t Target) KnobNames() []string {
	names := make([]string, 0, len(t.Knobs))
	for n := range t.Knobs {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// ClientKnobs are the target's client knobs (Knob.Client), which a custom target of the same
// protocol takes too, since the client is ours.
func (t Target) ClientKnobs() map[string]Knob {
	out := map[string]Knob{}
	for n, k := range t.Knobs {
		if k.Client {
			out[n] = k
		}
	}
	return out
}

// Address is host:port of the target's main listener on the compose network.
func (t Target) Address() string { return fmt.Sprintf("%s:%d", t.Name, t.Port) }

// PayloadMethods are the methods whose request carries payload_bytes.
var PayloadMethods = []string{contract.MethodEcho, contract.MethodEchoStream, MethodPublish}

// AllMethods is every method any target may serve: the contract's and MethodPublish.
func AllMethods() []string { return append(slices.Clone(contract.Methods), MethodPublish) }

// HTTPTargets names the targets that speak HTTP, for error messages.
func HTTPTargets() string {
	var names []string
	for _, t := range all {
		if t.IsHTTP() {
			names = append(names, t.Name)
		}
	}
	return strings.Join(names, ", ")
}
