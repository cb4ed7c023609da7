package scenario

import (
	"strings"
	"testing"
)

const transportScenario = `name: t
description: transport
defaults: {warmup: 1s, duration: 2s, repeats: 1, cooldown: 0s}
steps:
  - name: headline
    targets: [grpc, rest]
    method: GetUser
    in_flight: 100
  - name: topology
    targets: [grpc, rest]
    method: GetUser
    http_version: 2
    in_flight: 100
    matrix:
      connections: [1, 4, 100]
  - name: grid
    targets: [rest, grpc]
    method: GetUser
    in_flight: 100
    matrix:
      http_version: ["1.1", 2]
      encoding: [json, protobuf]
`

func TestTransportTopologies(t *testing.T) {
	sc, err := Parse("t.yaml", []byte(transportScenario))
	if err != nil {
		t.Fatal(err)
	}
	plan, err := sc.Plan(PlanOptions{Cores: 2})
	if err != nil {
		t.Fatal(err)
	}
	type shape struct {
		step, target, httpVersion, encoding string
		conns, conc                         int
	}
	var got []shape
	for _, r := range plan.Runs {
		got = append(got, shape{r.Step, r.Target, r.HTTPVersion, r.Encoding, r.Connections, r.Concurrency})
	}
	want := []shape{
		// Natural topologies: one channel for gRPC, a connection per request for HTTP/1.1.
		{"headline", "grpc", "", "", 1, 100},
		{"headline", "rest", "1.1", "json", 100, 1},
		// Fixed connections spread in_flight; HTTP/2 lets REST follow gRPC's topologies.
		{"topology-conn1", "grpc", "", "", 1, 100},
		{"topology-conn1", "rest", "2", "json", 1, 100},
		{"topology-conn4", "grpc", "", "", 4, 25},
		{"topology-conn4", "rest", "2", "json", 4, 25},
		{"topology-conn100", "grpc", "", "", 100, 1},
		{"topology-conn100", "rest", "2", "json", 100, 1},
		// The grid runs REST in every cell and gRPC once, under the step's plain name.
		{"grid-h1-json", "rest", "1.1", "json", 100, 1},
		{"grid", "grpc", "", "", 1, 100},
		{"grid-h1-protobuf", "rest", "1.1", "protobuf", 100, 1},
		{"grid-h2-json", "rest", "2", "json", 1, 100},
		{"grid-h2-protobuf", "rest", "2", "protobuf", 1, 100},
	}
	if len(got) != len(want) {
		t.Fatalf("got %d runs, want %d:\n%v", len(got), len(want), got)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("run %d = %+v, want %+v", i, got[i], want[i])
		}
	}
	if s := plan.Runs[0].TopologyText(); !strings.Contains(s, "one gRPC channel") {
		t.Errorf("gRPC topology text %q", s)
	}
	if s := plan.Runs[1].TopologyText(); !strings.Contains(s, "100 keep-alive HTTP/1.1 connections") {
		t.Errorf("REST topology text %q", s)
	}
}

func TestTransportErrors(t *testing.T) {
	cases := []struct{ step, want string }{
		{"    targets: [rest]\n    in_flight: 100\n    matrix: {connections: [4]}\n",
			"rest cannot carry 25 requests on one connection"},
		{"    targets: [grpc]\n    in_flight: 100\n    connections: 3\n",
			"in_flight 100 does not spread evenly over 3 connections"},
		{"    targets: [grpc]\n    http_version: 2\n",
			"applies to HTTP targets only"},
		{"    targets: [rest]\n    in_flight: 10\n    concurrency: 2\n",
			"in_flight and concurrency exclude each other"},
		{"    targets: [rest]\n    http_version: 3\n",
			`unknown HTTP version "3"`},
		{"    targets: [rest]\n    encoding: xml\n",
			`unknown encoding "xml"`},
	}
	for _, tc := range cases {
		src := "name: t\ndescription: x\nsteps:\n  - name: s\n    method: GetUser\n" + tc.step
		_, err := Parse("t.yaml", []byte(src))
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("step\n%s: error %v, want it to contain %q", tc.step, err, tc.want)
		}
		if err != nil && !strings.Contains(err.Error(), "t.yaml:") {
			t.Errorf("error %q does not name the file and line", err)
		}
	}
}
