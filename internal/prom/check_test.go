package prom_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/protobench/protobench/internal/prom/promtest"

	"github.com/protobench/protobench/internal/dashboards"
	"github.com/protobench/protobench/internal/prom"
)

// Debian's packages (apt-get install prometheus prometheus-node-exporter).
const nodeExporterBin = "/usr/bin/prometheus-node-exporter"

// start runs a binary until the test ends and fails the test if it exits early.
func start(t *testing.T, name string, args ...string) {
	t.Helper()
	cmd := exec.Command(name, args...)
	logPath := filepath.Join(t.TempDir(), filepath.Base(name)+".log")
	logFile, err := os.Create(logPath)
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stdout, cmd.Stderr = logFile, logFile
	if err := cmd.Start(); err != nil {
		t.Fatalf("start %s: %v", name, err)
	}
	t.Cleanup(func() {
		cmd.Process.Kill()
		cmd.Wait()
		logFile.Close()
		if t.Failed() {
			log, _ := os.ReadFile(logPath)
			t.Logf("%s output:\n%s", name, log)
		}
	})
}

// waitFor polls cond every 200 ms until it holds or the deadline passes.
func waitFor(t *testing.T, within time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(within)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("gave up waiting for %s after %s", what, within)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// startPrometheus runs a Prometheus of the test's own scraping itself (and node-exporter when
// nodeAddr is set) every second, as the compose Prometheus does, and returns its base URL.
func startPrometheus(t *testing.T, nodeAddr string) string {
	t.Helper()
	addr := promtest.FreeAddr(t)
	config := fmt.Sprintf(`global:
  scrape_interval: 1s
  evaluation_interval: 1s
scrape_configs:
  - job_name: prometheus
    static_configs:
      - targets: [%q]
`, addr)
	if nodeAddr != "" {
		config += fmt.Sprintf(`  - job_name: node
    static_configs:
      - targets: [%q]
`, nodeAddr)
	}
	return promtest.Start(t, addr, config)
}

func TestCheckClassifiesQueries(t *testing.T) {
	url := startPrometheus(t, "")
	ctx := context.Background()
	waitFor(t, 30*time.Second, "the first self-scrape", func() bool {
		return len(prom.New(url).Check(ctx, []prom.Query{{Name: "up", Expr: `up{job="prometheus"}`}})) == 0
	})
	cases := []struct {
		name string
		expr string
		want prom.Kind // "" = no problem
	}{
		{"series", `up{job="prometheus"}`, ""},
		{"scalar", `1 + 1`, ""},
		{"unclosed paren", `sum(rate(up[5s])`, prom.KindParse},
		{"unknown function", `nosuchfunc(up)`, prom.KindParse},
		{"absent metric", `protobench_no_such_metric_total`, prom.KindEmpty},
		{"label that is not there", `up{job="no-such-job"}`, prom.KindEmpty},
		{"execution error", `label_replace(up, "x", "$1", "job", "(")`, prom.KindError},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			problems := prom.New(url).Check(ctx, []prom.Query{{Name: c.name, Expr: c.expr}})
			switch {
			case c.want == "" && len(problems) != 0:
				t.Errorf("want no problem, got %v", problems)
			case c.want != "" && (len(problems) != 1 || problems[0].Kind != c.want):
				t.Errorf("want one %s problem, got %v", c.want, problems)
			}
		})
	}
}

func TestCheckUnreachablePrometheus(t *testing.T) {
	addr := promtest.FreeAddr(t) // nothing listens here any more
	qs := []prom.Query{{Name: "a", Expr: "up"}, {Name: "b", Expr: "up"}, {Name: "c", Expr: "up"}}
	problems := prom.New("http://"+addr).Check(context.Background(), qs)
	if len(problems) != len(qs) {
		t.Fatalf("got %d problems, want %d: %v", len(problems), len(qs), problems)
	}
	for i, p := range problems {
		if p.Kind != prom.KindError || p.Query.Name != qs[i].Name {
			t.Errorf("problem %d = %v", i, p)
		}
	}
	if !strings.Contains(problems[0].Message, addr) {
		t.Errorf("first message %q does not name the address %s", problems[0].Message, addr)
	}
	if !strings.HasPrefix(problems[1].Message, "not run") {
		t.Errorf("after a transport error the rest should not be sent; got %q", problems[1].Message)
	}
}

// TestDashboardQueriesAgainstPrometheus runs every dashboard query through a real Prometheus: none
// may fail to parse. With node-exporter scraped too, the host dashboard's queries must return series,
// which proves the node-exporter metric names and labels are right. The protobench, cAdvisor and
// server metrics do not exist here, so those queries are expected to come back empty; the end-to-end
// test checks them against the compose stack.
func TestDashboardQueriesAgainstPrometheus(t *testing.T) {
	nodeAddr := ""
	if _, err := os.Stat(nodeExporterBin); err == nil {
		nodeAddr = promtest.FreeAddr(t)
		start(t, nodeExporterBin, "--web.listen-address="+nodeAddr)
	} else {
		t.Logf("%s not installed, host queries are only parsed", nodeExporterBin)
	}
	url := startPrometheus(t, nodeAddr)
	ctx := context.Background()
	qs := dashboards.Queries()

	problems := prom.New(url).Check(ctx, qs)
	for _, p := range prom.Filter(problems, prom.KindParse, prom.KindError) {
		t.Errorf("%v", p)
	}
	if nodeAddr == "" {
		return
	}
	var host []prom.Query
	for _, q := range qs {
		if strings.HasPrefix(q.Name, dashboards.HostUID+" /") {
			host = append(host, q)
		}
	}
	// Rates need two samples inside the 5 s window: wait for the scrapes to accumulate.
	deadline := time.Now().Add(60 * time.Second)
	for last := prom.New(url).Check(ctx, host); len(last) > 0; last = prom.New(url).Check(ctx, host) {
		if time.Now().After(deadline) {
			for _, p := range last {
				t.Errorf("%v", p)
			}
			t.Fatal("host queries still empty after 60 s of scrapes")
		}
		time.Sleep(500 * time.Millisecond)
	}
	t.Logf("%d dashboard queries parsed and ran; %d host queries returned series", len(qs), len(host))
}

// TestDashboardQueriesAgainstLivePrometheus runs the dashboard queries against a Prometheus that is
// already running, e.g. the compose stack's during or right after a run:
//
//	PROTOBENCH_PROM_URL=http://127.0.0.1:9090 go test -count=1 -v -run LivePrometheus ./internal/prom
//
// Parse errors and failures fail the test; empty results are listed, since which series exist
// depends on what ran.
func TestDashboardQueriesAgainstLivePrometheus(t *testing.T) {
	url := os.Getenv("PROTOBENCH_PROM_URL")
	if url == "" {
		t.Skip("set PROTOBENCH_PROM_URL to check the dashboards against a running Prometheus")
	}
	qs := dashboards.Queries()
	problems := prom.New(url).Check(context.Background(), qs)
	for _, p := range problems {
		if p.Kind == prom.KindEmpty {
			t.Logf("%v", p)
		} else {
			t.Errorf("%v", p)
		}
	}
	t.Logf("%d queries, %d returned series, %d empty", len(qs), len(qs)-len(problems), len(prom.Filter(problems, prom.KindEmpty)))
}
