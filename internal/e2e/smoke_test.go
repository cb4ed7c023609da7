// Package e2e runs the real thing: the protobench binary, the real images, the compose stack and
// Prometheus, on the smoke scenario. ./run.sh test enables it with PROTOBENCH_E2E=1.
package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/protobench/protobench/internal/compose"
	"github.com/protobench/protobench/internal/dashboards"
	"github.com/protobench/protobench/internal/prom"
	"github.com/protobench/protobench/internal/record"
	"github.com/protobench/protobench/internal/results"
	"github.com/protobench/protobench/internal/scenario"
	"github.com/protobench/protobench/internal/stepinfo"
	"github.com/protobench/protobench/internal/swarm/swarmtest"
	"github.com/protobench/protobench/internal/tool"
	_ "github.com/protobench/protobench/internal/tool/all"
)

func TestSmokeEndToEnd(t *testing.T) {
	c := requireE2E(t, "the smoke scenario through the compose stack")
	swarmtest.ComposeStack(t)
	out := t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Minute)
	defer cancel()

	// --keep-up leaves Prometheus running so this test can look at what it recorded.
	t.Cleanup(func() {
		if out, err := c.run(context.Background(), "down"); err != nil {
			t.Logf("protobench down: %v\n%s", err, out)
		}
	})
	started := time.Now()
	output, err := c.run(ctx, "run", "smoke", "--out", out, "--keep-up")
	t.Logf("protobench run smoke (%s):\n%s", time.Since(started).Round(time.Second), output)
	if err != nil {
		t.Fatalf("protobench run smoke: %v", err)
	}

	dirs, _ := filepath.Glob(filepath.Join(out, "*-smoke"))
	if len(dirs) != 1 {
		t.Fatalf("expected one results folder under %s, found %v", out, dirs)
	}
	dir := dirs[0]
	for _, f := range []string{"run.json", "results.json", "results.csv", "summary.md", "scenario.yaml"} {
		if _, err := os.Stat(filepath.Join(dir, f)); err != nil {
			t.Errorf("results folder lacks %s: %v", f, err)
		}
	}
	recs, err := results.Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(recs) == 0 {
		t.Fatal("results.json holds no records")
	}
	servers := map[string]bool{}
	for _, r := range recs {
		name := fmt.Sprintf("%s/%s/%s", r.Step, r.Target, r.Tool)
		servers[r.Target] = true
		if r.ThroughputRPS <= 0 {
			t.Errorf("%s: throughput %.1f, want > 0 (error: %s)", name, r.ThroughputRPS, r.Error)
		}
		if len(r.RawFiles) == 0 {
			t.Errorf("%s: no raw tool output kept", name)
		}
		for _, f := range r.RawFiles {
			if _, err := os.Stat(filepath.Join(dir, f)); err != nil {
				t.Errorf("%s: raw file %s missing: %v", name, f, err)
			}
		}
		if r.ServerCPUSeconds <= 0 {
			t.Errorf("%s: server CPU %.3f s, want > 0 from cAdvisor", name, r.ServerCPUSeconds)
		}
		checkTLSRecord(t, name, r)
		if r.HasFlag(record.FlagCountMismatch) {
			t.Errorf("%s: count-mismatch: %s", name, r.ServerCount)
		}
		if strings.HasPrefix(r.ServerCount, "not checked") && r.Method != "EchoStream" {
			t.Errorf("%s: the server's own count was %s", name, r.ServerCount)
		}
		// Compression none: whatever a tool advertises (ghz and k6 offer gzip), the server must
		// not have compressed a reply. Every server of ours counts its replies by encoding.
		if r.ReplyEncoding != "" && r.ReplyEncoding != "identity" {
			t.Errorf("%s: the server's replies went out %s under compression %q", name, r.ReplyEncoding, r.Compression)
		}
		if r.ReplyEncoding == "" && r.Method != "EchoStream" {
			t.Errorf("%s: no reply encoding read from the server", name)
		}
	}
	checkNoUnequalWork(t, dir)

	var info struct {
		RunID         string          `json:"run_id"`
		PrometheusURL string          `json:"prometheus_url"`
		Layout        scenario.Layout `json:"cpu_layout"`
		TLS           *struct {
			CASHA256 string `json:"ca_sha256"`
		} `json:"tls"`
	}
	b, err := os.ReadFile(filepath.Join(dir, "run.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &info); err != nil {
		t.Fatal(err)
	}
	if info.TLS == nil || len(info.TLS.CASHA256) != 64 {
		t.Errorf("run.json's tls section %+v: want the run's CA fingerprint (the smoke scenario has TLS steps)", info.TLS)
	}
	checkStackPlacement(ctx, t, info.Layout, recs)
	checkCoreTime(t, info.Layout, recs)
	pc := prom.New(info.PrometheusURL)
	for target := range servers {
		expr := fmt.Sprintf(`count(count_over_time(container_cpu_usage_seconds_total{container_label_com_docker_compose_service=%q}[30m]))`, target)
		n, ok, err := pc.Scalar(ctx, expr, time.Time{})
		if err != nil || !ok || n == 0 {
			t.Errorf("Prometheus holds no cAdvisor samples for server %s (%s): n=%v ok=%v err=%v", target, expr, n, ok, err)
		}
	}

	// The load generator's live metrics must have reached Prometheus during the run.
	live := `count(count_over_time(protobench_client_requests_total[30m]))`
	if n, ok, err := pc.Scalar(ctx, live, time.Time{}); err != nil || !ok || n == 0 {
		t.Errorf("Prometheus holds no live load-generator series (%s): n=%v ok=%v err=%v", live, n, ok, err)
	}

	checkDashboardQueries(ctx, t, pc, info.RunID, recs)
	if testing.Verbose() {
		s, _ := os.ReadFile(filepath.Join(dir, "summary.md"))
		t.Logf("summary.md:\n%s", strings.TrimSpace(string(s)))
	}
}

// checkDashboardQueries runs every dashboard query as Grafana would with one record's step chosen
// in the variables: a range query over that record's measured window (start_unix to end_unix).
// A query that fails is an error; so is an empty one whose panel should have data for the record's
// tool (dashboards.Expect). With a run id that never existed, the step-following queries of the
// overview must come back empty, which proves they filter by run rather than show every container.
func checkDashboardQueries(ctx context.Context, t *testing.T, pc *prom.Client, runID string, recs []record.Record) {
	t.Helper()
	checked, empty := 0, 0
	for _, r := range recs {
		if !r.Valid() || r.EndUnix <= r.StartUnix {
			continue
		}
		name := fmt.Sprintf("%s/%s/%s r%d", r.Step, r.Target, r.Tool, r.Repeat)
		start := time.Unix(0, int64(r.StartUnix*1e9))
		end := time.Unix(0, int64(r.EndUnix*1e9))
		labels := stepinfo.Step{RunID: runID, Scenario: r.Scenario, Step: r.Step, Repeat: r.Repeat, Target: r.Target, Tool: r.Tool}.Labels()
		for _, q := range dashboards.QueriesWith(dashboards.StepValues(labels, r.EndUnix-r.StartUnix)) {
			series, err := pc.QueryRange(ctx, q.Expr, start, end, time.Second)
			checked++
			switch {
			case err != nil:
				t.Errorf("%s: dashboard query %s: %v", name, q.Name, err)
			case len(series) > 0:
			case q.Expect.Wants(tool.LiveMetricsOf(r.Tool), r.CPUMicrosPerRequest > 0):
				t.Errorf("%s: dashboard query %s returned no data over the step's window %s to %s:\n\t%s",
					name, q.Name, start.UTC().Format(time.TimeOnly), end.UTC().Format(time.TimeOnly), q.Expr)
			default:
				empty++
			}
		}
		// The same step under a run id that never existed: nothing that follows steps may show.
		labels["run_id"] = "no-such-run"
		for _, q := range dashboards.QueriesWith(dashboards.StepValues(labels, r.EndUnix-r.StartUnix)) {
			// The run variable lists every run, whatever run is chosen.
			if !strings.HasPrefix(q.Name, dashboards.OverviewUID+" /") || q.Name == dashboards.OverviewUID+" / variable run_id" {
				continue
			}
			series, err := pc.QueryRange(ctx, q.Expr, start, end, time.Second)
			if err == nil && len(series) > 0 {
				t.Errorf("%s: dashboard query %s shows %d series for a run that never happened (%v): it does not filter by run",
					name, q.Name, len(series), series[0].Labels)
			}
		}
	}
	t.Logf("%d dashboard queries run over their records' windows; %d were empty where the tool gives them no data", checked, empty)
}

// checkStackPlacement: each record says where the observability stack sat during its run, which
// is where the layout wants it for a client-bound tool or not (the server's core on a 2-core
// host): as the tool declares in a cell's first repeat, as the previous repeat measured in later
// ones; and the stack's containers, still up (--keep-up), sit where the last run put them.
func checkStackPlacement(ctx context.Context, t *testing.T, layout scenario.Layout, recs []record.Record) {
	t.Helper()
	last, moved := "", false
	type cell struct{ step, target, tool string }
	previous := map[cell]record.Record{}
	for _, r := range recs {
		if !r.Valid() {
			continue
		}
		a, ok := tool.Lookup(r.Tool)
		if !ok {
			t.Errorf("%s/%s: no adapter for tool %s", r.Step, r.Target, r.Tool)
			continue
		}
		bound := a.Capabilities().ClientBound
		if filled, known := previous[cell{r.Step, r.Target, r.Tool}].ToolFilledItsCore(); known {
			bound = filled
		}
		previous[cell{r.Step, r.Target, r.Tool}] = r
		want := layout.StackCPUSet(bound)
		if r.ObservabilityCPUSet != want {
			t.Errorf("%s/%s/%s: observability stack on cpuset %q, want %q (layout %+v)", r.Step, r.Target, r.Tool, r.ObservabilityCPUSet, want, layout)
		}
		moved = moved || want != layout.ObservabilityCPUSet
		last = r.ObservabilityCPUSet
	}
	t.Logf("layout %+v; the stack moved for a client-bound tool: %v", layout, moved)
	if last == "" {
		return
	}
	for _, svc := range []string{"prometheus", "cadvisor", "node-exporter"} {
		out, err := exec.CommandContext(ctx, "docker", "ps", "-q", "--filter", "label=com.docker.compose.project="+compose.DefaultProjectName,
			"--filter", "label=com.docker.compose.service="+svc).Output()
		id := strings.TrimSpace(string(out))
		if err != nil || id == "" || strings.Contains(id, "\n") {
			t.Errorf("the stack's %s container: %q %v", svc, id, err)
			continue
		}
		got, err := exec.CommandContext(ctx, "docker", "inspect", "--format", "{{.HostConfig.CpusetCpus}}", id).Output()
		if err != nil || strings.TrimSpace(string(got)) != last {
			t.Errorf("%s sits on cpuset %q (%v), want %q, where the last run put the stack", svc, strings.TrimSpace(string(got)), err, last)
		}
	}
}

// checkCoreTime: every run says how the server's and the tools' cores spent its window, the
// modes adding up to 100 %, and where the server has one core of its own, that core was at
// least as busy as cAdvisor says the server was (its container cannot use more of the core than
// the core spent, give or take the two readings' different sampling).
func checkCoreTime(t *testing.T, layout scenario.Layout, recs []record.Record) {
	t.Helper()
	cpus, err := scenario.ParseCPUSet(layout.ServerCPUSet)
	if err != nil {
		t.Fatal(err)
	}
	if layout.Shared {
		return // server and tools share cores: the runner reads no core time then
	}
	for _, r := range recs {
		name := fmt.Sprintf("%s/%s/%s r%d", r.Step, r.Target, r.Tool, r.Repeat)
		for side, c := range map[string]*record.CoreTime{"server": r.ServerCores, "client": r.ClientCores} {
			if c == nil {
				t.Errorf("%s: no %s core time", name, side)
				continue
			}
			if sum := c.UserPercent + c.SystemPercent + c.SoftirqPercent + c.IdlePercent + c.OtherPercent; sum < 99.5 || sum > 100.5 {
				t.Errorf("%s: %s core time %+v adds up to %.1f %%", name, side, *c, sum)
			}
		}
		if c := r.ServerCores; c != nil && len(cpus) == 1 && r.ServerCPUPercentOfCap > 0 {
			t.Logf("%s: server core user %.1f system %.1f softirq %.1f idle %.1f %%; the server %.0f %% of its cap", name, c.UserPercent, c.SystemPercent, c.SoftirqPercent, c.IdlePercent, r.ServerCPUPercentOfCap)
			if busy := 100 - c.IdlePercent; busy < r.ServerCPUPercentOfCap-15 {
				t.Errorf("%s: the server's core was %.1f %% busy, yet the server used %.0f %% of its one-core cap", name, busy, r.ServerCPUPercentOfCap)
			}
		}
	}
}

// checkTLSRecord checks a smoke TLS step's record: the server's handshakes negotiated TLS 1.3,
// and the churning run's connections were each shaken hands anew (its handshake rate is the
// request rate over 10, resumed or not; a loose lower bound is enough to see they happened).
func checkTLSRecord(t *testing.T, name string, r record.Record) {
	t.Helper()
	if !strings.HasPrefix(r.Step, "tls") {
		if r.TLS != nil {
			t.Errorf("%s: a cleartext step's record carries TLS state %+v", name, r.TLS)
		}
		return
	}
	switch {
	case r.TLS == nil:
		t.Errorf("%s: no TLS state in a TLS step's record", name)
		return
	case r.TLS.Version == "" && r.TLS.Source != "":
		// A server that does not count its handshakes (grpcio's) says so instead.
		return
	case r.TLS.Version != "TLS 1.3":
		t.Errorf("%s: TLS state %+v, want the server's handshakes on TLS 1.3", name, r.TLS)
		return
	}
	if r.Step == "tls-churn" {
		// One handshake per 10 requests, over the same window: the rate once counted part of
		// the warm-up as well, about 25 % too many.
		perTen := r.TLS.HandshakesPerSec * 10 / r.ThroughputRPS
		if r.RequestsPerConnection != 10 || perTen < 0.75 || perTen > 1.2 {
			t.Errorf("%s: %d requests per connection, %.0f handshakes/s at %.0f req/s (%.2f per 10 requests); want 10 and one handshake per 10 requests (0.75 to 1.2)",
				name, r.RequestsPerConnection, r.TLS.HandshakesPerSec, r.ThroughputRPS, perTen)
		}
	}
}
