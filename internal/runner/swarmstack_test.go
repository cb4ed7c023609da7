package runner

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/protobench/protobench/internal/record"
	"github.com/protobench/protobench/internal/swarm"
	"github.com/protobench/protobench/internal/tool"
	"github.com/protobench/protobench/internal/tool/protobenchtool"
)

func node(id, host, role string, self bool, labels ...string) swarm.Node {
	n := swarm.Node{ID: id, Hostname: host, Role: role, State: "ready", Availability: "active", Self: self, Labels: map[string]string{}}
	if len(labels) > 0 {
		n.Labels[swarm.RoleLabel] = labels[0]
	}
	return n
}

func TestPlanPlacement(t *testing.T) {
	p, err := planPlacement([]swarm.Node{node("a", "alpha", "manager", true)})
	if err != nil || !p.single || p.constraint(swarm.RoleServer) != "" || p.describe() != "single-node" {
		t.Errorf("one unlabelled node: %+v %v", p, err)
	}
	_, err = planPlacement([]swarm.Node{node("a", "alpha", "manager", true), node("b", "beta", "worker", false)})
	if err == nil || !strings.Contains(err.Error(), "docker node update --label-add protobench.role=server alpha") ||
		!strings.Contains(err.Error(), "protobench.role=client beta") {
		t.Errorf("two unlabelled nodes: %v", err)
	}
	_, err = planPlacement([]swarm.Node{node("a", "alpha", "manager", true, "server"), node("b", "beta", "worker", false)})
	if err == nil || !strings.Contains(err.Error(), "protobench.role=client") {
		t.Errorf("no client node: %v", err)
	}
	_, err = planPlacement([]swarm.Node{node("a", "alpha", "manager", true, "server"), node("b", "beta", "worker", false, "client"), node("c", "gamma", "worker", false, "monitor")})
	if err == nil || !strings.Contains(err.Error(), "worker") {
		t.Errorf("a worker as monitor: %v", err)
	}
	down := node("d", "delta", "worker", false, "client")
	down.State = "down"
	p, err = planPlacement([]swarm.Node{node("a", "alpha", "manager", true, "server"), node("b", "beta", "worker", false, "client"), down})
	if err != nil || p.single || len(p.clients) != 1 || p.constraint(swarm.RoleClient) != swarm.RoleClient || p.describe() != "servers=alpha clients=beta" {
		t.Errorf("labelled nodes: %+v %v", p, err)
	}
}

func TestSwarmAnnotate(t *testing.T) {
	s := &swarmStack{place: placement{single: true}}
	var rec record.Record
	s.annotate(&rec)
	if rec.Engine != EngineSwarm || rec.Placement != "single-node" || !rec.HasFlag(record.FlagSharedCores) || len(rec.Notes) != 1 {
		t.Errorf("single node: %+v", rec)
	}
	s = &swarmStack{place: placement{}}
	s.last = runPlacement{server: "alpha", clients: []string{"beta", "gamma"}, notes: []string{"load split among 2 client nodes, histograms merged"}}
	rec = record.Record{}
	s.annotate(&rec)
	if rec.Placement != "server=alpha client=beta,gamma" || rec.HasFlag(record.FlagSharedCores) || len(rec.Notes) != 2 {
		t.Errorf("two nodes: %+v", rec)
	}
	if s.last.server != "" {
		t.Error("the placement is not reset for the next run")
	}
}

func TestSplitter(t *testing.T) {
	a := protobenchtool.Adapter{}
	inv := tool.Invocation{Target: "grpc", Address: "grpc:50051", Scheme: "grpc", Method: "Echo", Model: "closed",
		Connections: 4, Concurrency: 2, PayloadBytes: 64, RawDir: "/raw", RawPrefix: "r1", Duration: 2e9}
	parts := splitter(a, inv)
	if parts == nil {
		t.Fatal("protobench's generator cannot split")
	}
	args, merge, err := parts(2)
	if err != nil || len(args) != 2 || merge == nil {
		t.Fatalf("split in 2: %v %v", args, err)
	}
	if !slices.ContainsFunc(args[1], func(s string) bool { return strings.Contains(s, "r1.part2") }) {
		t.Errorf("part 2 writes its own files: %q", args[1])
	}
	if _, _, err := parts(9); err == nil {
		t.Error("8 requests in flight split among 9 clients")
	}
	if ghz, ok := tool.Lookup("ghz"); ok && splitter(ghz, inv) != nil {
		t.Error("ghz's results cannot be merged, so it must not split")
	}
}

func TestGOMAXPROCSFor(t *testing.T) {
	for _, tc := range []struct {
		cpus string
		want int
	}{
		{"1", 1}, {"1.0", 1}, {"0.5", 1}, {"1.5", 2}, {"2", 2}, {"0.25", 1}, {" 3 ", 3},
		{"", 0}, {"0", 0}, {"-1", 0}, {"lots", 0}, {"Inf", 0},
	} {
		if got := GOMAXPROCSFor(tc.cpus); got != tc.want {
			t.Errorf("GOMAXPROCSFor(%q) = %d, want %d", tc.cpus, got, tc.want)
		}
	}
}

func TestOthersPercent(t *testing.T) {
	for _, tc := range []struct {
		name        string
		busy, ours  float64
		cores       int
		window      time.Duration
		wantPercent float64
	}{
		{"a spinner beside a half-busy tool", 9.5, 4.5, 1, 10 * time.Second, 50},
		{"quiet", 5.2, 5, 1, 10 * time.Second, 2},
		{"two cores", 10, 2, 2, 10 * time.Second, 40},
		{"ours read above busy", 4, 4.3, 1, 10 * time.Second, 0},
		{"no window", 1, 0, 1, 0, 0},
	} {
		if got := othersPercent(tc.busy, tc.ours, tc.cores, tc.window); got != tc.wantPercent {
			t.Errorf("%s: othersPercent = %v, want %v", tc.name, got, tc.wantPercent)
		}
	}
}
