package scenario

import (
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"
)

// axisStep is the scenario the axis tables below complete with one step's body.
const axisStep = "name: t\ndescription: d\ndefaults: {warmup: 1s, duration: 2s, repeats: 1}\nsteps:\n  - name: s\n"

// Each axis on a step and in a matrix: every run gets the value of its variant.
func TestAxisStepAndMatrix(t *testing.T) {
	for _, c := range []struct {
		name  string
		yaml  string
		value func(Run) any
		want  map[string]any // step/target: the run's value
	}{
		{"requests_per_connection", `name: t
description: churn
defaults: {warmup: 1s, duration: 2s, repeats: 1, cooldown: 0s}
steps:
  - name: ten
    targets: [grpc, netrpc]
    method: GetUser
    requests_per_connection: 10
  - name: churn
    targets: [grpc, rest]
    method: GetUser
    in_flight: 10
    tls: true
    matrix:
      requests_per_connection: [1, 100, forever]
`, func(r Run) any { return r.RequestsPerConnection }, map[string]any{
			"ten/grpc": 10, "ten/netrpc": 10,
			"churn-perconn1/grpc": 1, "churn-perconn1/rest": 1,
			"churn-perconn100/grpc": 100, "churn-perconn100/rest": 100,
			"churn-perconnforever/grpc": 0, "churn-perconnforever/rest": 0,
		}},
		{"tls", `name: t
description: tls
defaults: {warmup: 1s, duration: 2s, repeats: 1, cooldown: 0s}
steps:
  - name: on
    targets: [grpc, netrpc, python-grpc]
    method: GetUser
    tls: true
  - name: pair
    targets: [grpc, rest]
    method: GetUser
    in_flight: 100
    matrix:
      tls: [false, true]
`, func(r Run) any { return r.TLS }, map[string]any{
			"on/grpc": true, "on/netrpc": true, "on/python-grpc": true,
			"pair-clear/grpc": false, "pair-clear/rest": false, "pair-tls/grpc": true, "pair-tls/rest": true,
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			sc, err := Parse("t.yaml", []byte(c.yaml))
			if err != nil {
				t.Fatal(err)
			}
			plan, err := sc.Plan(PlanOptions{Cores: 2})
			if err != nil {
				t.Fatal(err)
			}
			got := map[string]any{}
			for _, r := range plan.Runs {
				got[r.Step+"/"+r.Target] = c.value(r)
			}
			for k, v := range c.want {
				if x, ok := got[k]; !ok || x != v {
					t.Errorf("run %s: planned %v (%s %v), want %v", k, ok, c.name, x, v)
				}
			}
			if len(got) != len(c.want) {
				t.Errorf("runs %v, want %v", got, c.want)
			}
		})
	}
}

// What each axis refuses, on the step and in a matrix, with its line and field.
func TestAxisErrors(t *testing.T) {
	for _, c := range []struct{ name, body, want string }{
		{"churn zero", "    targets: [grpc]\n    method: GetUser\n    requests_per_connection: 0\n",
			"t.yaml:8: steps[0].requests_per_connection: expected requests per connection from 1 to 1000000, or forever"},
		{"churn word", "    targets: [grpc]\n    method: GetUser\n    requests_per_connection: always\n",
			"t.yaml:8: steps[0].requests_per_connection: expected requests per connection"},
		{"churn zeromq", "    targets: [zeromq]\n    method: GetUser\n    requests_per_connection: 10\n",
			"t.yaml:8: steps[0].requests_per_connection: tool protobench cannot churn zmq connections (target zeromq); tools that can: none"},
		{"churn tool", "    targets: [grpc]\n    tools: [protobench, ghz]\n    method: GetUser\n    requests_per_connection: 1\n",
			"t.yaml:9: steps[0].requests_per_connection: tool ghz cannot churn grpc connections (target grpc); tools that can: protobench"},
		{"churn tool in matrix", "    targets: [rest]\n    tools: [wrk]\n    method: GetUser\n    matrix:\n      requests_per_connection: [1, forever]\n",
			"t.yaml:10: steps[0].matrix.requests_per_connection: tool wrk cannot churn http connections"},
		{"churn both", "    targets: [grpc]\n    method: GetUser\n    requests_per_connection: 1\n    matrix:\n      requests_per_connection: [10]\n",
			"requests_per_connection is set on the step and in its matrix; keep one"},
		{"churn twice", "    targets: [grpc]\n    method: GetUser\n    matrix:\n      requests_per_connection: [forever, forever]\n",
			"t.yaml:9: steps[0].matrix.requests_per_connection[1]: value forever listed twice"},
		{"tls zeromq", "    targets: [zeromq]\n    method: GetUser\n    tls: true\n",
			"t.yaml:8: steps[0].tls: target zeromq does not serve TLS: ZeroMQ has no TLS transport"},
		{"tls word", "    targets: [grpc]\n    method: GetUser\n    tls: yes-please\n", "expected true or false"},
		{"tls twice", "    targets: [grpc]\n    method: GetUser\n    matrix:\n      tls: [true, true]\n", "value true listed twice"},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := Parse("t.yaml", []byte(axisStep+c.body))
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Errorf("%v; want %q", err, c.want)
			}
		})
	}
}

// Steps an axis must accept.
func TestAxisAccepted(t *testing.T) {
	for _, c := range []struct{ name, body string }{
		// A reuse-only setting (forever) is accepted for any tool: nothing churns.
		{"churn forever needs no capability", "    targets: [rest]\n    tools: [wrk]\n    method: GetUser\n    requests_per_connection: forever\n"},
		// Every registered tool now drives TLS (k6 too: https:// and gRPC over TLS with the run's
		// CA), so a TLS step naming k6 loads; validateTLS still refuses a tool whose Capabilities
		// say no.
		{"tls with k6", "    targets: [grpc, rest]\n    tools: [protobench, k6]\n    method: GetUser\n    tls: true\n"},
	} {
		t.Run(c.name, func(t *testing.T) {
			if _, err := Parse("t.yaml", []byte(axisStep+c.body)); err != nil {
				t.Fatal(err)
			}
		})
	}
}

// uniqueAxis on a type no axis uses yet: values in file order, the line of the key, and a
// duplicate refused at its own item, written back by the axis's text.
func TestUniqueAxis(t *testing.T) {
	var root yaml.Node
	if err := yaml.Unmarshal([]byte("axis:\n  - a\n  - b\n  - a\n  - 7\n"), &root); err != nil {
		t.Fatal(err)
	}
	d := &decoder{collector: collector{file: "t.yaml"}}
	pos := map[string]int{}
	var got []string
	h := uniqueAxis(d, pos, "axis", &got, d.str, func(s string) string { return "<" + s + ">" })
	h(root.Content[0].Content[1], "matrix.axis")
	if strings.Join(got, ",") != "a,b" || pos["matrix.axis"] != 2 {
		t.Errorf("values %v, line %d; want [a b] and line 2", got, pos["matrix.axis"])
	}
	want := []string{
		"t.yaml:4: matrix.axis[2]: value <a> listed twice",
		"t.yaml:5: matrix.axis[3]: expected a string, got integer 7 (quote it)",
	}
	if err := d.err(); err == nil || err.Error() != strings.Join(want, "\n") {
		t.Errorf("errors:\n%v\nwant:\n%s", err, strings.Join(want, "\n"))
	}
}
