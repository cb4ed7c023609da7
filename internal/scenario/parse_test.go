package scenario

import (
	"errors"
	"fmt"
	"strings"
	"testing"
)

// header is a valid scenario up to its first step; step lines appended to it start at line 7.
const header = `name: t
description: d
steps:
  - name: s
    targets: [grpc]
    method: Echo
`

func withStep(lines ...string) string {
	return header + strings.Join(lines, "\n") + "\n"
}

// zmqStep is a scenario of one step on zeromq with method; its further lines start at line 7.
func zmqStep(method string, lines ...string) string {
	return "name: t\ndescription: d\nsteps:\n  - name: s\n    targets: [zeromq]\n    method: " + method + "\n" + strings.Join(lines, "\n") + "\n"
}

func TestParseErrors(t *testing.T) {
	cases := []struct {
		name  string
		yaml  string
		line  int
		field string
		msg   string
	}{
		{"unknown top-level key", "name: t\nnmae: x\ndescription: d\nsteps: []\n", 2, "nmae", `unknown key "nmae"`},
		{"unknown step key", withStep("    conections: 4"), 7, "steps[0].conections", "unknown key"},
		{"wrong type integer", withStep("    connections: ten"), 7, "steps[0].connections", `expected an integer, got string "ten"`},
		{"wrong type list", "name: t\ndescription: d\nsteps:\n  - name: s\n    targets: grpc\n    method: Echo\n", 5, "steps[0].targets", "expected a list"},
		{"wrong type mapping", "name: t\ndescription: d\ndefaults: 30s\nsteps:\n  - {name: s, targets: [grpc], method: Echo}\n", 3, "defaults", "expected a mapping"},
		{"name must be a string", "name: 2024\ndescription: d\nsteps:\n  - {name: s, targets: [grpc], method: Echo}\n", 1, "name", "expected a string"},
		{"unknown target", "name: t\ndescription: d\nsteps:\n  - name: s\n    targets: [grpc, soap]\n    method: Echo\n", 5, "steps[0].targets[1]", `unknown target "soap"`},
		{"unknown tool", withStep("    tools: [protobench, jmeter]"), 7, "steps[0].tools[1]", `unknown tool "jmeter"`},
		{"zero duration", withStep("    duration: 0s"), 7, "steps[0].duration", "positive duration"},
		{"negative warmup", withStep("    warmup: -1s"), 7, "steps[0].warmup", "duration >= 0"},
		{"negative default duration", "name: t\ndescription: d\ndefaults:\n  duration: -5s\nsteps:\n  - {name: s, targets: [grpc], method: Echo}\n", 4, "defaults.duration", "positive duration"},
		{"duration without unit", withStep("    duration: 30"), 7, "steps[0].duration", "with a unit"},
		{"zero repeats", withStep("    repeats: 0"), 7, "steps[0].repeats", "from 1 to"},
		{"empty matrix list", withStep("    matrix:", "      concurrency: []"), 8, "steps[0].matrix.concurrency", "empty list"},
		{"empty matrix", withStep("    matrix: {}"), 7, "steps[0].matrix", "expands to nothing"},
		{"matrix duplicate value", withStep("    matrix:", "      concurrency: [1, 2, 1]"), 8, "steps[0].matrix.concurrency[2]", "listed twice"},
		{"matrix and step both", withStep("    concurrency: 2", "    matrix:", "      concurrency: [1, 2]"), 9, "steps[0].matrix.concurrency", "both on the step and in its matrix"},
		{"rate for wrk", "name: t\ndescription: d\nsteps:\n  - name: s\n    targets: [rest]\n    method: GetUser\n    model: open\n    rate: 1000\n    tools:\n      - protobench\n      - wrk\n",
			11, "steps[0].tools[1]", "wrk is closed-loop only and cannot take a rate"},
		{"rate in matrix for wrk", "name: t\ndescription: d\nsteps:\n  - name: s\n    targets: [rest]\n    method: GetUser\n    model: open\n    tools: [wrk]\n    matrix:\n      rate: [100, 200]\n",
			8, "steps[0].tools[0]", "closed-loop only"},
		{"wrk2 closed", "name: t\ndescription: d\nsteps:\n  - name: s\n    targets: [rest]\n    method: GetUser\n    tools: [wrk2]\n", 7, "steps[0].tools[0]", "wrk2 needs a rate (model open)"},
		{"ghz on rest", "name: t\ndescription: d\nsteps:\n  - name: s\n    targets: [rest]\n    method: GetUser\n    tools: [ghz]\n", 7, "steps[0].tools[0]", "ghz cannot drive rest: ghz speaks gRPC only"},
		{"wrk on grpc", withStep("    tools: [wrk]"), 7, "steps[0].tools[0]", "wrk cannot drive grpc"},
		{"rate in closed model", withStep("    rate: 100"), 7, "steps[0].rate", "model: open only"},
		{"open without rate", withStep("    model: open"), 7, "steps[0].model", "needs a rate"},
		{"bad model", withStep("    model: half-open"), 7, "steps[0].model", "expected closed or open"},
		{"duplicate key", withStep("    connections: 1", "    connections: 2"), 8, "steps[0].connections", "key given twice (first at line 7)"},
		{"duplicate step", withStep("  - name: s", "    targets: [rest]", "    method: Echo"), 7, "steps[1].name", `step name "s" already used at line 4`},
		{"missing step name", "name: t\ndescription: d\nsteps:\n  - targets: [grpc]\n    method: Echo\n", 4, "steps[0]", `missing key "name"`},
		{"missing method", "name: t\ndescription: d\nsteps:\n  - name: s\n    targets: [grpc]\n", 4, "steps[0]", `missing key "method"`},
		{"missing steps", "name: t\ndescription: d\n", 1, "scenario", `missing key "steps"`},
		{"no steps", "name: t\ndescription: d\nsteps: []\n", 3, "steps", "empty list"},
		{"bad scenario name", "name: Grpc Vs Rest\ndescription: d\nsteps:\n  - {name: s, targets: [grpc], method: Echo}\n", 1, "name", "lower-case letters"},
		{"syntax error", "name: t\ndescription: d\nsteps:\n  - name: s\n   targets: [grpc\n", 3, "yaml", "line 3: did not find expected"},
		{"empty file", "", 1, "scenario", "empty file"},
		{"not a mapping", "- a\n- b\n", 1, "scenario", "expected a mapping"},
		{"two documents", header + "---\nname: u\n", 7, "yaml", "more than one YAML document"},
		{"unknown method", "name: t\ndescription: d\nsteps:\n  - name: s\n    targets: [grpc]\n    method: Ping\n", 6, "steps[0].method", `unknown method "Ping"`},
		{"method not on target", "name: t\ndescription: d\nsteps:\n  - name: s\n    targets: [grpc, rest]\n    method: EchoStream\n", 5, "steps[0].targets[1]", "rest does not implement method EchoStream"},
		{"payload on GetUser", "name: t\ndescription: d\nsteps:\n  - name: s\n    targets: [grpc]\n    method: GetUser\n    payload_bytes: 1KiB\n", 7, "steps[0].payload_bytes", "applies to Echo"},
		{"payload bad size", withStep("    payload_bytes: 1 parsec"), 7, "steps[0].payload_bytes", "expected a size"},
		{"payload over the server limit", withStep("    payload_bytes: 32MiB"), 7, "steps[0].payload_bytes", "exceeds grpc's max_payload_bytes"},
		{"unknown knob", withStep("    servers:", "      grpc:", "        knobs: {max_streams: 10}"), 9, "steps[0].servers.grpc.knobs.max_streams", `unknown key "max_streams"; expected one of fail_every, handler_cpu, max_concurrent_streams, max_payload_bytes, read_buffer_bytes, stream_workers, write_buffer_bytes`},
		{"handler_cpu above its bound", withStep("    servers:", "      grpc:", "        knobs: {handler_cpu: 5ms}"), 9, "steps[0].servers.grpc.knobs.handler_cpu", "expected a duration from 0 to 1ms"},
		{"bad knob value", "name: t\ndescription: d\nservers:\n  python-grpc:\n    knobs:\n      mode: threads\nsteps:\n  - {name: s, targets: [python-grpc], method: Echo}\n", 6, "servers.python-grpc.knobs.mode", "expected one of sync, aio"},
		{"servers for a target the step skips", withStep("    servers:", "      rest: {cpus: 1}"), 7, "steps[0].servers.rest", "does not run target rest"},
		{"zmq_pattern moved", withStep("    zmq_pattern: dealer"), 7, "steps[0].zmq_pattern", "moved: use servers.zeromq.knobs.pattern"},
		{"zmq pattern without zeromq", withStep("    servers:", "      zeromq:", "        knobs: {pattern: dealer}"), 7, "steps[0].servers.zeromq", "does not run target zeromq"},
		{"zmq pattern on another target", withStep("    servers:", "      grpc:", "        knobs: {pattern: dealer}"), 9, "steps[0].servers.grpc.knobs.pattern", "knob pattern applies to target zeromq only, not grpc"},
		{"zeromq knobs list the pattern", zmqStep("Echo", "    servers:", "      zeromq:", "        knobs: {patern: req}"), 9, "steps[0].servers.zeromq.knobs.patern", "expected one of handler_cpu, io_threads, max_payload_bytes, pattern, rcvhwm, sndhwm"},
		{"bad zmq pattern", zmqStep("Echo", "    servers:", "      zeromq:", "        knobs: {pattern: pair}"), 9, "steps[0].servers.zeromq.knobs.pattern", `expected one of dealer, req, push, sub, got "pair"`},
		{"sub without Publish", zmqStep("Echo", "    servers:", "      zeromq:", "        knobs: {pattern: sub}"), 9, "steps[0].servers.zeromq.knobs.pattern", "pattern sub (SUB to PUB: fan-out of Publish) needs method Publish"},
		{"push without Echo", zmqStep("GetUser", "    servers:", "      zeromq:", "        knobs:", "          pattern: push"), 10, "steps[0].servers.zeromq.knobs.pattern", "pattern push (PUSH raw payloads to PULL, counted at the sink) needs method Echo"},
		{"scenario-wide sub without Publish", "name: t\ndescription: d\nservers:\n  zeromq:\n    knobs: {pattern: sub}\nsteps:\n  - {name: s, targets: [zeromq], method: Echo}\n", 5, "servers.zeromq.knobs.pattern", "needs method Publish; step s runs Echo"},
		{"Publish on the default pattern", zmqStep("Publish"), 6, "steps[0].method", "method Publish needs pattern sub on zeromq (servers.zeromq.knobs.pattern: sub)"},
		{"step pattern over a wrong scenario-wide one", "name: t\ndescription: d\nservers:\n  zeromq:\n    knobs: {pattern: sub}\nsteps:\n  - {name: s, targets: [zeromq], method: Echo}\n  - {name: p, targets: [zeromq], method: Publish, servers: {zeromq: {knobs: {pattern: dealer}}}}\n", 8, "steps[1].servers.zeromq.knobs.pattern", "pattern dealer (DEALER to ROUTER, requests pipelined on one socket) needs method Echo or GetUser or Multiply or Divide"},
		{"mix and method", withStep("    mix: {Echo: 1, GetUser: 1}"), 7, "steps[0].mix", "either method or mix"},
		{"mix of one", "name: t\ndescription: d\nsteps:\n  - name: s\n    targets: [grpc]\n    mix: {Echo: 1}\n", 6, "steps[0].mix", "at least two methods"},
		{"mix with ghz", "name: t\ndescription: d\nsteps:\n  - name: s\n    targets: [grpc]\n    mix: {Echo: 1, GetUser: 2}\n    tools: [ghz]\n", 7, "steps[0].tools[0]", "cannot run a mix"},
		{"baseline not a target", withStep("    baseline: rest"), 7, "steps[0].baseline", "not among the step's targets"},
		{"cpus zero", "name: t\ndescription: d\ncaps:\n  server_cpus: 0\nsteps:\n  - {name: s, targets: [grpc], method: Echo}\n", 4, "caps.server_cpus", "expected a number >"},
		{"bad cpuset", "name: t\ndescription: d\nlayout:\n  server_cpuset: 0-x\nsteps:\n  - {name: s, targets: [grpc], method: Echo}\n", 4, "layout.server_cpuset", "expected a cpuset"},
		{"huge matrix", withStep("    matrix:", "      connections: ["+seq(1, 40)+"]", "      concurrency: ["+seq(1, 40)+"]"), 8, "steps[0].matrix", "expands to 1600 variants"},
		{"figure unknown step", "name: t\ndescription: d\npublished:\n  hardware: {description: h}\n  method: m\n  figures:\n    - {name: f, measures: m, value: 1, unit: req/s, metric: throughput_rps, step: nope, target: grpc}\nsteps:\n  - {name: s, targets: [grpc], method: Echo}\n",
			7, "published.figures[0].step", `unknown step "nope"; expected one of s`},
		{"figure unit mismatch", "name: t\ndescription: d\npublished:\n  hardware: {description: h}\n  method: m\n  figures:\n    - {name: f, measures: m, value: 1, unit: ms, metric: throughput_rps, step: s, target: grpc}\nsteps:\n  - {name: s, targets: [grpc], method: Echo}\n",
			7, "published.figures[0].unit", "does not fit metric throughput_rps"},
		{"figure match hits nothing", "name: t\ndescription: d\npublished:\n  hardware: {description: h}\n  method: m\n  figures:\n    - {name: f, measures: m, value: 1, unit: req/s, metric: throughput_rps, step: s, target: grpc, match: {connections: 3}}\nsteps:\n  - {name: s, targets: [grpc], method: Echo, matrix: {connections: [1, 2]}}\n",
			7, "published.figures[0].match", "no variant of step s matches connections=3"},
		{"figure unknown unit", "name: t\ndescription: d\npublished:\n  hardware: {description: h}\n  method: m\n  figures:\n    - {name: f, measures: m, value: 1, unit: qps}\nsteps:\n  - {name: s, targets: [grpc], method: Echo}\n",
			7, "published.figures[0].unit", `unknown unit "qps"`},
		{"figure at knee without threshold", "name: t\ndescription: d\npublished:\n  hardware: {description: h}\n  method: m\n  figures:\n    - {name: f, measures: m, value: 1, unit: req/s, metric: throughput_rps, step: s, target: grpc, at: knee}\nsteps:\n  - {name: s, targets: [grpc], method: Echo}\n",
			7, "published.figures[0].at", "needs knee_p99_ms"},
		{"hardware missing description", "name: t\ndescription: d\npublished:\n  hardware: {cores: 8}\n  method: m\n  figures: [{name: f, measures: m, value: 1, unit: req/s}]\nsteps:\n  - {name: s, targets: [grpc], method: Echo}\n",
			4, "published.hardware", `missing key "description"`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse("x.yaml", []byte(tc.yaml))
			if err == nil {
				t.Fatalf("no error for:\n%s", tc.yaml)
			}
			var es Errors
			if !errors.As(err, &es) {
				t.Fatalf("error is %T, not Errors: %v", err, err)
			}
			prefix := fmt.Sprintf("x.yaml:%d: %s: ", tc.line, tc.field)
			for _, e := range es {
				if s := e.Error(); strings.HasPrefix(s, prefix) && strings.Contains(s, tc.msg) {
					return
				}
			}
			t.Errorf("want an error starting %q containing %q; got:\n%v", prefix, tc.msg, err)
		})
	}
}

func seq(from, to int) string {
	parts := make([]string, 0, to-from+1)
	for i := from; i <= to; i++ {
		parts = append(parts, fmt.Sprint(i))
	}
	return strings.Join(parts, ", ")
}

// TestParseReportsEveryError checks that one pass reports all problems, in line order.
func TestParseReportsEveryError(t *testing.T) {
	_, err := Parse("x.yaml", []byte(withStep("    connections: zero", "    tools: [jmeter]", "    duration: 0s")))
	var es Errors
	if !errors.As(err, &es) || len(es) != 3 {
		t.Fatalf("want 3 errors, got %v", err)
	}
	for i, line := range []int{7, 8, 9} {
		if es[i].Line != line {
			t.Errorf("error %d at line %d, want %d: %v", i, es[i].Line, line, es[i])
		}
	}
}

func TestParseValid(t *testing.T) {
	src := `name: demo
description: everything at once
source: 003_x.txt
caps:
  server_cpus: 1
  client_memory: 512m
layout:
  server_cpuset: 0
servers:
  grpc:
    knobs: {max_concurrent_streams: 1_000, max_payload_bytes: 32MiB}
  python-grpc:
    knobs: {mode: aio}
defaults:
  warmup: 1s
  duration: 2s
  repeats: 2
  cooldown: 0s
steps:
  - name: a
    targets: [grpc, rest]
    tools: [protobench, ghz, wrk, k6]
    method: Echo
    payload_bytes: 20MiB
    servers:
      rest:
        knobs: {max_payload_bytes: 32MiB}
  - name: b
    targets: [zeromq]
    method: Publish
    servers:
      zeromq:
        knobs: {pattern: sub, sndhwm: 1000}
  - name: c
    targets: [python-grpc]
    mix: {GetUser: 1, Echo: 3}
  - name: d
    targets: [netrpc]
    method: Multiply
    model: open
    matrix:
      rate: [100, 250.5]
`
	sc, err := Parse("demo.yaml", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	if got := sc.Servers["grpc"].Knobs["max_concurrent_streams"]; got != "1000" {
		t.Errorf("knob = %q, want 1000", got)
	}
	if got := sc.Servers["grpc"].Knobs["max_payload_bytes"]; got != "33554432" {
		t.Errorf("max_payload_bytes = %q, want 33554432", got)
	}
	if sc.Caps.ClientMemoryBytes != 512<<20 {
		t.Errorf("client memory = %d", sc.Caps.ClientMemoryBytes)
	}
	if sc.Defaults.Repeats != 2 || sc.Defaults.Warmup.Seconds() != 1 {
		t.Errorf("defaults = %+v", sc.Defaults)
	}
	if c, _ := sc.Step("c"); c.Method != "Echo:3,GetUser:1" {
		t.Errorf("mix method = %q", c.Method)
	}
	if d, _ := sc.Step("d"); d.Model != ModelOpen {
		t.Errorf("model = %q", d.Model)
	}
	if b, _ := sc.Step("b"); b.Servers["zeromq"].Knobs["pattern"] != "sub" {
		t.Errorf("pattern = %q", b.Servers["zeromq"].Knobs["pattern"])
	}
	if sc.Hash() != mustParse(t, src).Hash() || len(sc.Hash()) != 64 {
		t.Errorf("hash not stable: %s", sc.Hash())
	}
	if mustParse(t, src+"# comment\n").Hash() == sc.Hash() {
		t.Error("hash ignores a change in the file")
	}
}

func mustParse(t *testing.T, src string) *Scenario {
	t.Helper()
	sc, err := Parse("t.yaml", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	return sc
}

func TestParseSize(t *testing.T) {
	cases := []struct {
		in   string
		want int64
		ok   bool
	}{
		{"1024", 1024, true},
		{"1KiB", 1024, true},
		{"1KB", 1000, true},
		{"10MB", 10_000_000, true},
		{"512m", 512 << 20, true},
		{"1.5GiB", 3 << 29, true},
		{"16 MiB", 16 << 20, true},
		{"0", 0, true},
		{"1.5", 0, false},
		{"KiB", 0, false},
		{"1TB", 0, false},
		{"-1", 0, false},
	}
	for _, tc := range cases {
		t.Run(tc.in, func(t *testing.T) {
			got, err := ParseSize(tc.in)
			if (err == nil) != tc.ok || got != tc.want {
				t.Errorf("ParseSize(%q) = %d, %v; want %d, ok=%v", tc.in, got, err, tc.want, tc.ok)
			}
		})
	}
}
