package scenario

import (
	"strings"
	"testing"
)

func TestChurnStepAndMatrix(t *testing.T) {
	sc, err := Parse("t.yaml", []byte(`name: t
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
`))
	if err != nil {
		t.Fatal(err)
	}
	plan, err := sc.Plan(PlanOptions{Cores: 2})
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]int{}
	for _, r := range plan.Runs {
		got[r.Step+"/"+r.Target] = r.RequestsPerConnection
	}
	want := map[string]int{
		"ten/grpc": 10, "ten/netrpc": 10,
		"churn-perconn1/grpc": 1, "churn-perconn1/rest": 1,
		"churn-perconn100/grpc": 100, "churn-perconn100/rest": 100,
		"churn-perconnforever/grpc": 0, "churn-perconnforever/rest": 0,
	}
	for k, v := range want {
		if n, ok := got[k]; !ok || n != v {
			t.Errorf("run %s: planned %v (requests per connection %d), want %d", k, ok, n, v)
		}
	}
	if len(got) != len(want) {
		t.Errorf("runs %v, want %v", got, want)
	}
}

func TestChurnErrors(t *testing.T) {
	for _, c := range []struct{ name, body, want string }{
		{"zero", "    targets: [grpc]\n    method: GetUser\n    requests_per_connection: 0\n",
			"t.yaml:8: steps[0].requests_per_connection: expected requests per connection from 1 to 1000000, or forever"},
		{"word", "    targets: [grpc]\n    method: GetUser\n    requests_per_connection: always\n",
			"t.yaml:8: steps[0].requests_per_connection: expected requests per connection"},
		{"zeromq", "    targets: [zeromq]\n    method: GetUser\n    requests_per_connection: 10\n",
			"t.yaml:8: steps[0].requests_per_connection: tool protobench cannot churn zmq connections (target zeromq); tools that can: none"},
		{"tool", "    targets: [grpc]\n    tools: [protobench, ghz]\n    method: GetUser\n    requests_per_connection: 1\n",
			"t.yaml:9: steps[0].requests_per_connection: tool ghz cannot churn grpc connections (target grpc); tools that can: protobench"},
		{"tool in matrix", "    targets: [rest]\n    tools: [wrk]\n    method: GetUser\n    matrix:\n      requests_per_connection: [1, forever]\n",
			"t.yaml:10: steps[0].matrix.requests_per_connection: tool wrk cannot churn http connections"},
		{"both", "    targets: [grpc]\n    method: GetUser\n    requests_per_connection: 1\n    matrix:\n      requests_per_connection: [10]\n",
			"requests_per_connection is set on the step and in its matrix; keep one"},
		{"twice", "    targets: [grpc]\n    method: GetUser\n    matrix:\n      requests_per_connection: [forever, forever]\n",
			"t.yaml:9: steps[0].matrix.requests_per_connection[1]: value forever listed twice"},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := Parse("t.yaml", []byte("name: t\ndescription: d\ndefaults: {warmup: 1s, duration: 2s, repeats: 1}\nsteps:\n  - name: s\n"+c.body))
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Errorf("%v; want %q", err, c.want)
			}
		})
	}
}

// A reuse-only matrix (forever) is accepted for any tool: nothing churns.
func TestChurnForeverNeedsNoCapability(t *testing.T) {
	_, err := Parse("t.yaml", []byte("name: t\ndescription: d\ndefaults: {warmup: 1s, duration: 2s, repeats: 1}\nsteps:\n  - name: s\n"+
		"    targets: [rest]\n    tools: [wrk]\n    method: GetUser\n    requests_per_connection: forever\n"))
	if err != nil {
		t.Fatal(err)
	}
}

func TestChurnTopologyText(t *testing.T) {
	r := Run{Protocol: "grpc", Model: ModelClosed, Connections: 1, Concurrency: 100, RequestsPerConnection: 1}
	want := "100 connections at a time, 1 request in flight on each, each closed after 1 request and replaced"
	if got := r.TopologyText(); got != want {
		t.Errorf("%q, want %q", got, want)
	}
}

// The dry run's table says which runs are TLS and how many requests each connection carries.
func TestChurnInDryRunTable(t *testing.T) {
	sc, err := Parse("t.yaml", []byte("name: t\ndescription: d\ndefaults: {warmup: 1s, duration: 2s, repeats: 1}\nsteps:\n  - name: s\n"+
		"    targets: [rest]\n    method: GetUser\n    in_flight: 100\n    tls: true\n    requests_per_connection: 1\n"))
	if err != nil {
		t.Fatal(err)
	}
	plan, err := sc.Plan(PlanOptions{Cores: 2})
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	if err := plan.Print(&b); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(b.String(), "100×1 tls 1/conn") {
		t.Errorf("dry-run table lacks the run's TLS and churn:\n%s", b.String())
	}
}
