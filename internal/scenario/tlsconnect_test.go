package scenario

import "testing"

// connect-go serves TLS (targets: its entry's TLS, ALPN h2 and http/1.1), so a TLS step on
// connect, in both HTTP versions, and on connect-grpc loads and plans TLS runs; a TLS matrix
// beside the HTTP versions gives each cell its cleartext and TLS variant.
func TestTLSStepOnConnect(t *testing.T) {
	sc, err := Parse("t.yaml", []byte(`name: t
description: tls on connect-go
defaults: {warmup: 1s, duration: 2s, repeats: 1, cooldown: 0s}
steps:
  - name: on
    targets: [connect, connect-grpc]
    tools: [protobench, h2load]
    method: GetUser
    in_flight: 10
    tls: true
  - name: pair
    targets: [connect]
    method: GetUser
    in_flight: 10
    matrix:
      http_version: ["1.1", "2"]
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
		got[r.Step+"/"+r.Target+"/"+r.Tool+"/"+r.HTTPVersion] = r.TLS
	}
	want := map[string]bool{
		"on/connect/protobench/1.1": true, "on/connect/h2load/1.1": true,
		"on/connect-grpc/protobench/": true, "on/connect-grpc/h2load/": true,
		"pair-clear-h1/connect/protobench/1.1": false, "pair-tls-h1/connect/protobench/1.1": true,
		"pair-clear-h2/connect/protobench/2": false, "pair-tls-h2/connect/protobench/2": true,
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
