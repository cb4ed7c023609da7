package scenario

import (
	"strings"
	"testing"
)

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
