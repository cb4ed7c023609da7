package dashboards

import (
	"context"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/protobench/protobench/internal/prom"
	"github.com/protobench/protobench/internal/stepinfo"
)

// nodeSeries matches a selector of the series that carry a node label on a swarm: cAdvisor's,
// node-exporter's and the servers' (requests and TLS handshakes).
var nodeSeries = regexp.MustCompile(`\b((container|node|protobench_server|protobench_tls)_[a-zA-Z0-9_]+)\{([^}]*)\}`)

// TestNodeVariableInEverySelector: every cAdvisor, node-exporter and server selector of a panel
// follows the node variable, and each dashboard has the variable with the All value that keeps
// compose's node-less series.
func TestNodeVariableInEverySelector(t *testing.T) {
	for _, d := range All() {
		var node *Variable
		for i, v := range d.Templating.List {
			if v.Name == "node" {
				node = &d.Templating.List[i]
			}
		}
		if node == nil {
			t.Errorf("%s: no node variable", d.UID)
			continue
		}
		if node.AllValue != ".*" || !node.IncludeAll || !node.Multi || node.Current.Value[0] != "$__all" {
			t.Errorf("%s: node variable %+v, want multi, All included and chosen, All value .*", d.UID, *node)
		}
		checked := 0
		for _, p := range flatten(d.Panels) {
			for _, tg := range p.Targets {
				for _, m := range nodeSeries.FindAllStringSubmatch(tg.Expr, -1) {
					if m[1] == "node_uname_info" {
						continue
					}
					checked++
					if !strings.Contains(m[3], nodeMatcher) {
						t.Errorf("%s / %s / %s: %s{%s} does not follow $node", d.UID, p.Title, tg.RefID, m[1], m[3])
					}
				}
			}
		}
		if checked == 0 {
			t.Errorf("%s: no cAdvisor, node-exporter or server selector found", d.UID)
		}
	}
}

// TestNodeVariableOnSwarmSeries writes one step as a two-node swarm run leaves it (server on
// server-1, load tool on client-1, every scraped series with its node label) into a real
// Prometheus and runs the overview's queries with All nodes, then with each node chosen.
func TestNodeVariableOnSwarmSeries(t *testing.T) {
	url := startPrometheus(t)
	ctx := context.Background()
	start := time.Now().Add(-40 * time.Second).Truncate(time.Second)
	end := start.Add(12 * time.Second)
	st := stepinfo.Step{RunID: "run-swarm", Scenario: "smoke", Step: "servers", Repeat: 1, Target: "grpc", Tool: "protobench"}
	w := &seriesWriter{}
	w.gauge(stepinfo.InfoMetric, st.Labels(), start, end, 1)
	for _, node := range []string{"server-1", "client-1"} {
		w.counter("node_cpu_seconds_total", map[string]string{"cpu": "0", "mode": "user", "instance": "10.0.1.9:9100", "job": "node-exporter", "node": node}, start, end, 0.5)
	}
	sl := map[string]string{"target": "grpc", "instance": "10.0.1.7:9100", "job": "servers", "node": "server-1", "protocol": "grpc", "method": "GetUser", "code": "OK"}
	w.counter("protobench_server_requests_total", sl, start, end, 1000)
	for role, node := range map[string]string{"server": "server-1", "tool": "client-1"} {
		cl := map[string]string{"container_label_protobench_role": role, "id": "/docker/" + role, "job": "cadvisor", "node": node, "cpu": "total"}
		for k, v := range st.Labels() {
			cl["container_label_protobench_"+k] = v
		}
		w.counter("container_cpu_usage_seconds_total", cl, start, end, 0.8)
		delete(cl, "cpu")
		w.gauge("container_spec_cpu_quota", cl, start, end, 100000)
		w.gauge("container_spec_cpu_period", cl, start, end, 100000)
	}
	if err := stepinfo.NewWriter(url).Write(ctx, w.out); err != nil {
		t.Fatal(err)
	}

	pc := prom.New(url)
	from, to := start.Add(2*time.Second), end.Add(-time.Second)
	run := func(node string) map[string][]prom.RangeSeries {
		vals := StepValues(st.Labels(), to.Sub(from).Seconds())
		if node != "" {
			vals["node"] = node
		}
		got := map[string][]prom.RangeSeries{}
		for _, q := range QueriesWith(vals) {
			if !strings.HasPrefix(q.Name, OverviewUID+" /") {
				continue
			}
			series, err := pc.QueryRange(ctx, q.Expr, from, to, time.Second)
			if err != nil {
				t.Fatalf("%s: %v", q.Name, err)
			}
			got[strings.TrimPrefix(q.Name, OverviewUID+" / ")] = series
		}
		return got
	}
	nodesOf := func(series []prom.RangeSeries) string {
		var ns []string
		for _, s := range series {
			ns = append(ns, s.Labels["node"])
		}
		return strings.Join(ns, ",")
	}
	const (
		variable  = "variable node"
		serverCPU = "Server container CPU / A"
		toolCPU   = "Load tool container CPU / A"
		toolCap   = "Load tool container CPU / B"
		serverRPS = "Server request rate / A"
		hostCPU   = "Host CPU busy per core / A"
	)
	cases := []struct {
		node string
		want map[string]string // query -> the node labels of its series, comma-joined ("" = none)
	}{
		{"", map[string]string{serverCPU: "server-1", toolCPU: "client-1", toolCap: "client-1", serverRPS: "", hostCPU: "client-1,server-1"}},
		{"client-1", map[string]string{serverCPU: "", toolCPU: "client-1", serverRPS: "", hostCPU: "client-1"}},
		{"server-1", map[string]string{serverCPU: "server-1", toolCPU: "", hostCPU: "server-1"}},
		{"(client-1|server-1)", map[string]string{serverCPU: "server-1", toolCPU: "client-1", hostCPU: "client-1,server-1"}},
	}
	for _, c := range cases {
		got := run(c.node)
		if n := len(got[variable]); n != 2 {
			t.Errorf("node=%q: the node variable lists %d nodes, want 2: %v", c.node, n, got[variable])
		}
		for q, want := range c.want {
			series, ok := got[q]
			if !ok {
				t.Fatalf("no query %q", q)
			}
			// The server's request rate has no node label left after the join: only whether
			// it is there counts.
			if q == serverRPS {
				if (len(series) > 0) != (c.node != "client-1") {
					t.Errorf("node=%q: %s returned %d series", c.node, q, len(series))
				}
				continue
			}
			if g := nodesOf(sortByNode(series)); g != want {
				t.Errorf("node=%q: %s has series of nodes %q, want %q", c.node, q, g, want)
			}
		}
	}
}

func sortByNode(s []prom.RangeSeries) []prom.RangeSeries {
	out := append([]prom.RangeSeries{}, s...)
	for i := range out {
		for j := i + 1; j < len(out); j++ {
			if out[j].Labels["node"] < out[i].Labels["node"] {
				out[i], out[j] = out[j], out[i]
			}
		}
	}
	return out
}
