package scenario

import (
	"strings"
	"testing"
)

func TestTLSStepAndMatrix(t *testing.T) {
	sc, err := Parse("t.yaml", []byte(`name: t
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
`))
	if err != nil {
		t.Fatal(err)
	}
	plan, err := sc.Plan(PlanOptions{Cores: 2})
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]bool{}
	for _, r := range plan.Runs {
		got[r.Step+"/"+r.Target] = r.TLS
	}
	want := map[string]bool{
		"on/grpc": true, "on/netrpc": true, "on/python-grpc": true,
		"pair-clear/grpc": false, "pair-clear/rest": false, "pair-tls/grpc": true, "pair-tls/rest": true,
	}
	for k, v := range want {
		if tls, ok := got[k]; !ok || tls != v {
			t.Errorf("run %s: planned %v (tls %v), want tls %v", k, ok, tls, v)
		}
	}
	if len(got) != len(want) {
		t.Errorf("runs %v, want %v", got, want)
	}
}

func TestTLSErrors(t *testing.T) {
	for _, c := range []struct{ body, want string }{
		{"    targets: [zeromq]\n    method: GetUser\n    tls: true\n", "t.yaml:8: steps[0].tls: target zeromq does not serve TLS: ZeroMQ has no TLS transport"},
		{"    targets: [grpc]\n    method: GetUser\n    tls: yes-please\n", "expected true or false"},
		{"    targets: [grpc]\n    method: GetUser\n    matrix:\n      tls: [true, true]\n", "value true listed twice"},
	} {
		_, err := Parse("t.yaml", []byte("name: t\ndescription: d\ndefaults: {warmup: 1s, duration: 2s, repeats: 1}\nsteps:\n  - name: s\n"+c.body))
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%q: %v; want %q", c.body, err, c.want)
		}
	}
}

// Every registered tool now drives TLS (k6 too: https:// and gRPC over TLS with the run's CA), so
// a TLS step naming k6 loads; validateTLS still refuses a tool whose Capabilities say no.
func TestTLSStepWithK6(t *testing.T) {
	_, err := Parse("t.yaml", []byte("name: t\ndescription: d\ndefaults: {warmup: 1s, duration: 2s, repeats: 1}\nsteps:\n  - name: s\n"+
		"    targets: [grpc, rest]\n    tools: [protobench, k6]\n    method: GetUser\n    tls: true\n"))
	if err != nil {
		t.Fatal(err)
	}
}
