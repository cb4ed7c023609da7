package dashboards

import (
	"context"
	"math"
	"strconv"
	"strings"
	"testing"
	"time"

	"google.golang.org/protobuf/encoding/protowire"

	"github.com/protobench/protobench/internal/prom/promtest"

	"github.com/protobench/protobench/internal/prom"
	"github.com/protobench/protobench/internal/record"
	"github.com/protobench/protobench/internal/stepinfo"
	"github.com/protobench/protobench/internal/tool"
	_ "github.com/protobench/protobench/internal/tool/all"
)

// startPrometheus runs a Prometheus of the test's own with the compose stack's flags.
func startPrometheus(t *testing.T) string {
	t.Helper()
	return promtest.Start(t, "", "", promtest.StackFlags...)
}

// seriesWriter builds one-sample-a-second series over a window.
type seriesWriter struct{ out []stepinfo.Series }

// counter writes a counter rising by perSec from start to end; gauge a constant.
func (w *seriesWriter) counter(name string, labels map[string]string, start, end time.Time, perSec float64) {
	var s []stepinfo.Sample
	v := 0.0
	for t := start; !t.After(end); t = t.Add(time.Second) {
		s = append(s, stepinfo.Sample{At: t, Value: v})
		v += perSec
	}
	w.out = append(w.out, stepinfo.Series{Name: name, Labels: labels, Samples: append(s, stepinfo.Sample{At: end.Add(time.Second), Value: stepinfo.StaleNaN})})
}

func (w *seriesWriter) gauge(name string, labels map[string]string, start, end time.Time, v float64) {
	var s []stepinfo.Sample
	for t := start; !t.After(end); t = t.Add(time.Second) {
		s = append(s, stepinfo.Sample{At: t, Value: v})
	}
	w.out = append(w.out, stepinfo.Series{Name: name, Labels: labels, Samples: append(s, stepinfo.Sample{At: end.Add(time.Second), Value: stepinfo.StaleNaN})})
}

// histogram writes the _bucket series of a histogram with every observation in the first bucket.
func (w *seriesWriter) histogram(name string, labels map[string]string, start, end time.Time, perSec float64) {
	for _, le := range []string{"0.001", "0.01", "+Inf"} {
		l := with(labels, map[string]string{"le": le})
		w.counter(name+"_bucket", l, start, end, perSec)
	}
}

// nativeHistograms is a remote-write request of native histograms as k6 pushes its trends: one
// histogram a second per series from start to end, with perSec observations a second, all of
// value seconds. Encoded by hand (types.proto's Histogram and BucketSpan) like stepinfo's floats.
type nativeHistograms struct{ out []byte }

func (n *nativeHistograms) add(name string, labels map[string]string, start, end time.Time, perSec, seconds float64) {
	// Schema 0: bucket i holds (2^(i-1), 2^i].
	bucket := int64(math.Ceil(math.Log2(seconds)))
	ts := stepinfo.AppendLabels(nil, name, labels)
	count := 0.0
	for t := start; !t.After(end); t = t.Add(time.Second) {
		var span, h []byte
		span = protowire.AppendTag(span, 1, protowire.VarintType)
		span = protowire.AppendVarint(span, protowire.EncodeZigZag(bucket))
		span = protowire.AppendTag(span, 2, protowire.VarintType)
		span = protowire.AppendVarint(span, 1)
		h = protowire.AppendTag(h, 1, protowire.VarintType) // count_int
		h = protowire.AppendVarint(h, uint64(count))
		h = protowire.AppendTag(h, 3, protowire.Fixed64Type) // sum
		h = protowire.AppendFixed64(h, math.Float64bits(count*seconds))
		h = protowire.AppendTag(h, 4, protowire.VarintType) // schema 0
		h = protowire.AppendVarint(h, 0)
		h = protowire.AppendTag(h, 11, protowire.BytesType) // positive_spans
		h = protowire.AppendBytes(h, span)
		h = protowire.AppendTag(h, 12, protowire.BytesType) // positive_deltas, packed
		h = protowire.AppendBytes(h, protowire.AppendVarint(nil, protowire.EncodeZigZag(int64(count))))
		h = protowire.AppendTag(h, 15, protowire.VarintType) // timestamp
		h = protowire.AppendVarint(h, uint64(t.UnixMilli()))
		ts = protowire.AppendTag(ts, 4, protowire.BytesType) // TimeSeries.histograms
		ts = protowire.AppendBytes(ts, h)
		count += perSec
	}
	n.out = protowire.AppendTag(n.out, 1, protowire.BytesType)
	n.out = protowire.AppendBytes(n.out, ts)
}

func with(a, b map[string]string) map[string]string {
	out := map[string]string{}
	for k, v := range a {
		out[k] = v
	}
	for k, v := range b {
		out[k] = v
	}
	return out
}

// TestOverviewQueriesFollowSteps writes two steps the way a run leaves them in Prometheus (the
// runner's step series, the generator's or k6's series, the server's, cAdvisor's with the step's
// container labels, node-exporter's) into a real Prometheus, then runs every overview query as a
// range query over each step's window with that step chosen in the variables. Every query the
// step's tool should feed must return data, and none may return data for a run id that never was.
// The end-to-end test does the same against the series a real run leaves.
func TestOverviewQueriesFollowSteps(t *testing.T) {
	url := startPrometheus(t)
	ctx := context.Background()
	t0 := time.Now().Add(-90 * time.Second).Truncate(time.Second)
	steps := []struct {
		step   stepinfo.Step
		start  time.Time
		server string // compose service of the server
		tool   string // compose service of the tool
	}{
		{stepinfo.Step{RunID: "run-1", Scenario: "smoke", Step: "servers", Repeat: 1, Target: "grpc", Tool: "protobench"}, t0, "grpc", "loadgen"},
		{stepinfo.Step{RunID: "run-1", Scenario: "smoke", Step: "tools", Repeat: 1, Target: "rest", Tool: "k6"}, t0.Add(20 * time.Second), "rest", "k6"},
	}
	w, nh := &seriesWriter{}, &nativeHistograms{}
	nodeEnd := steps[len(steps)-1].start.Add(16 * time.Second)
	w.counter("node_cpu_seconds_total", map[string]string{"cpu": "0", "mode": "user", "instance": "node-exporter:9100", "job": "node-exporter"}, t0.Add(-10*time.Second), nodeEnd, 0.5)
	for _, s := range steps {
		st, start, end := s.step, s.start, s.start.Add(12*time.Second)
		w.gauge(stepinfo.InfoMetric, st.Labels(), start, end, 1)
		rec := record.Record{ThroughputRPS: 1000, Requests: 9000, CPUMicrosPerRequest: 50, LatencyMs: record.Latency{P99: 1},
			StartUnix: float64(start.Add(2 * time.Second).Unix()), EndUnix: float64(end.Add(-time.Second).Unix())}
		w.out = append(w.out, stepinfo.Figures(st, rec)...)
		switch st.Tool {
		case "protobench":
			l := map[string]string{"run_id": st.RunID, "scenario": st.Scenario, "step": st.Step, "target": st.Target, "method": "GetUser", "instance": "protobench-loadgen:9102", "job": "loadgen"}
			w.counter("protobench_client_requests_total", with(l, map[string]string{"code": "OK"}), start, end, 1000)
			w.histogram("protobench_client_latency_seconds", l, start, end, 1000)
			// A closed-model step, as the generator exports it: no service-time histogram (the
			// service-time panel falls back to latency).
			w.gauge("protobench_client_inflight", l, start, end, 4)
			w.gauge("protobench_client_scheduler_lag_seconds", l, start, end, 0)
		case "k6":
			l := map[string]string{"run_id": st.RunID, "step": st.Step, "target": st.Target, "tool": "k6", "scenario": "default"}
			w.counter("k6_iterations_total", l, start, end, 500)
			nh.add("k6_http_req_duration_seconds", l, start, end, 500, 0.002)
		}
		sl := map[string]string{"target": s.server, "instance": s.server + ":9100", "job": "servers", "protocol": "grpc", "method": "GetUser"}
		w.counter("protobench_server_requests_total", with(sl, map[string]string{"code": "OK"}), start, end, 1000)
		w.histogram("protobench_server_request_duration_seconds", sl, start, end, 1000)
		// Both steps churn over TLS: the server counts its handshakes, full and resumed.
		for _, resumed := range []string{"false", "true"} {
			tl := map[string]string{"target": s.server, "instance": s.server + ":9100", "job": "servers", "resumed": resumed}
			w.counter("protobench_tls_handshakes_total", with(tl, map[string]string{"version": "TLS 1.3", "cipher": "TLS_AES_128_GCM_SHA256", "curve": "X25519", "alpn": "h2"}), start, end, 100)
			w.counter("protobench_tls_handshake_cpu_seconds_total", tl, start, end, 12.5*0.0003)
			w.counter("protobench_tls_handshake_cpu_samples_total", tl, start, end, 12.5)
		}
		for role, service := range map[string]string{"server": s.server, "tool": s.tool} {
			cl := map[string]string{"container_label_com_docker_compose_service": service, "container_label_protobench_role": role, "id": "/docker/" + role + st.Step, "job": "cadvisor"}
			for k, v := range st.Labels() {
				cl["container_label_protobench_"+k] = v
			}
			w.counter("container_cpu_usage_seconds_total", with(cl, map[string]string{"cpu": "total"}), start, end, 0.8)
			w.counter("container_cpu_cfs_periods_total", cl, start, end, 10)
			w.counter("container_cpu_cfs_throttled_periods_total", cl, start, end, 1)
			w.counter("container_cpu_cfs_throttled_seconds_total", cl, start, end, 0.01)
			w.gauge("container_spec_cpu_quota", cl, start, end, 100000)
			w.gauge("container_spec_cpu_period", cl, start, end, 100000)
			w.gauge("container_memory_working_set_bytes", cl, start, end, 20e6)
		}
	}
	if err := stepinfo.NewWriter(url).Write(ctx, w.out); err != nil {
		t.Fatal(err)
	}
	if err := stepinfo.NewWriter(url).Send(ctx, nh.out); err != nil {
		t.Fatal(err)
	}

	pc := prom.New(url)
	for _, s := range steps {
		start, end := s.start.Add(2*time.Second), s.start.Add(11*time.Second)
		labels := s.step.Labels()
		check := func(runID string, wantData bool) {
			labels["run_id"] = runID
			for _, q := range QueriesWith(StepValues(labels, end.Sub(start).Seconds())) {
				// The run variable lists every run, whatever run is chosen.
				if !strings.HasPrefix(q.Name, OverviewUID+" /") || (!wantData && q.Name == OverviewUID+" / variable run_id") {
					continue
				}
				series, err := pc.QueryRange(ctx, q.Expr, start, end, time.Second)
				switch {
				case err != nil:
					t.Errorf("%s %s: %v", s.step, q.Name, err)
				case wantData && q.Expect.Wants(tool.LiveMetricsOf(s.step.Tool), true) && len(series) == 0:
					t.Errorf("%s: %s returned no data:\n\t%s", s.step, q.Name, q.Expr)
				case !wantData && len(series) > 0:
					t.Errorf("%s: %s shows %v for run %q, which never was:\n\t%s", s.step, q.Name, series[0].Labels, runID, q.Expr)
				case wantData && len(series) > 0 && strings.Contains(q.Expr, "sum by") && !strings.Contains(q.Name, "variable"):
					// sum by must keep the step label, so that two steps stay two lines.
					if _, ok := series[0].Labels["step"]; !ok {
						if _, ok := series[0].Labels["container_label_protobench_step"]; !ok {
							t.Errorf("%s: %s lost the step label: %v", s.step, q.Name, series[0].Labels)
						}
					}
				}
			}
		}
		check("run-1", true)
		check("no-such-run-"+strconv.Itoa(s.step.Repeat), false)
	}
}

// TestLiveClientPanelsHaveATool: the client panels are required of the tools that declare how
// their metrics reach Prometheus; if no tool declared a kind, its panels would never be checked.
func TestLiveClientPanelsHaveATool(t *testing.T) {
	for e, kind := range map[Expect]string{ExpectLiveClient: tool.LiveScrape, ExpectK6: tool.LiveRemoteWrite} {
		var by []string
		for _, name := range tool.Names() {
			if tool.LiveMetricsOf(name) == kind && e.Wants(kind, false) {
				by = append(by, name)
			}
		}
		if len(by) == 0 {
			t.Errorf("no tool declares LiveMetrics %q, so no step requires its panels", kind)
		}
		if e.Wants("", true) {
			t.Errorf("a tool without live metrics is asked for %q panels", kind)
		}
	}
}
