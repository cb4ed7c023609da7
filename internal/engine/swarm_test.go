package engine

import (
	"strings"
	"testing"

	"github.com/protobench/protobench/internal/record"
	"github.com/protobench/protobench/internal/swarm"
	"github.com/protobench/protobench/internal/tool"
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
	s := &Swarm{place: placement{single: true}}
	var rec record.Record
	s.Annotate(&rec)
	if rec.Engine != NameSwarm || rec.Placement != "single-node" || !rec.HasFlag(record.FlagSharedCores) || len(rec.Notes) != 1 {
		t.Errorf("single node: %+v", rec)
	}
	s = &Swarm{place: placement{}}
	s.last = runPlacement{server: "alpha", clients: []string{"beta", "gamma"}, partNodes: []string{"gamma", "beta"},
		notes: []string{"load split among 2 client nodes, histograms merged"}}
	rec = record.Record{ClientParts: []record.ClientPart{{Part: 1, Requests: 10}, {Part: 2, Requests: 20}}}
	s.Annotate(&rec)
	if rec.Placement != "server=alpha client=beta,gamma" || rec.HasFlag(record.FlagSharedCores) || len(rec.Notes) != 2 {
		t.Errorf("two nodes: %+v", rec)
	}
	if rec.ClientParts[0].Node != "gamma" || rec.ClientParts[1].Node != "beta" || rec.ClientParts[1].Requests != 20 {
		t.Errorf("each part's node (part 1 on gamma, part 2 on beta): %+v", rec.ClientParts)
	}
	if s.last.server != "" {
		t.Error("the placement is not reset for the next run")
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

// TestCapabilities: what each engine can do is data, and the runner reads nothing else.
func TestCapabilities(t *testing.T) {
	c := NewCompose(ComposeOptions{}).Capabilities()
	if c.Name != NameCompose || !c.PinsCores || !c.HostCores || !c.Grafana || c.ClientNodes != 1 || c.CleanupHint != "" {
		t.Errorf("compose: %+v", c)
	}
	s := &Swarm{calls: &calls{docker: "docker"}, project: "pb", place: placement{clients: []swarm.Node{{ID: "b"}, {ID: "c"}}}}
	sc := s.Capabilities()
	if sc.Name != NameSwarm || sc.PinsCores || sc.HostCores || sc.Grafana || sc.ClientNodes != 2 || !strings.Contains(sc.CleanupHint, "protobench.project=pb") {
		t.Errorf("swarm: %+v", sc)
	}
	if d := NewDrySwarm(DryOptions{Docker: "docker", Project: "pb"}).Capabilities(); d.Name != NameSwarm || d.PinsCores || d.HostCores {
		t.Errorf("dry run of a swarm: %+v", d)
	}
	if d := NewDryCompose(DryOptions{}).Capabilities(); d.Name != NameCompose || d.PinsCores || d.HostCores {
		t.Errorf("dry run of compose: %+v", d)
	}
}

// TestToolScrape: a tool job is labelled for Prometheus when the tool declares its live metrics
// scraped, whatever its service is called, and not otherwise.
func TestToolScrape(t *testing.T) {
	for _, tc := range []struct {
		name string
		o    OneOff
		job  string
		port int
	}{
		{"scraped", OneOff{Service: "loadgen", LiveMetrics: tool.LiveScrape}, "loadgen", 9102},
		{"scraped under another service", OneOff{Service: "mygen", LiveMetrics: tool.LiveScrape}, "loadgen", 9102},
		{"remote write", OneOff{Service: "k6", LiveMetrics: tool.LiveRemoteWrite}, "", 0},
		{"the loadgen service without live metrics", OneOff{Service: "loadgen"}, "", 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if job, port := toolScrape(tc.o); job != tc.job || port != tc.port {
				t.Errorf("toolScrape = %q %d, want %q %d", job, port, tc.job, tc.port)
			}
		})
	}
}
