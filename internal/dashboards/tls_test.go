package dashboards

import (
	"context"
	"fmt"
	"math"
	"strconv"
	"testing"
	"time"

	_ "github.com/protobench/protobench/internal/loadgen/driver/http"

	"github.com/protobench/protobench/internal/loadgen/driver/drivertest"
	"github.com/protobench/protobench/internal/prom"
	"github.com/protobench/protobench/internal/prom/promtest"
	"github.com/protobench/protobench/internal/record"
	"github.com/protobench/protobench/internal/servertest"
	"github.com/protobench/protobench/internal/stepinfo"
	"github.com/protobench/protobench/internal/tlscert"
)

// The TLS panels' queries, by the names QueriesWith gives them.
const (
	handshakesFull   = OverviewUID + " / Server TLS handshakes / A"
	handshakesResume = OverviewUID + " / Server TLS handshakes / B"
	cpuFull          = OverviewUID + " / Server CPU per TLS handshake / A"
	cpuResume        = OverviewUID + " / Server CPU per TLS handshake / B"
	serverRate       = OverviewUID + " / Server request rate / A"
)

// serverHandshakes reads a server's own handshake counters from its /metrics: full and resumed.
// It is what the panels must agree with.
func serverHandshakes(t *testing.T, metricsAddr string) (full, resumed float64) {
	all, resumed := servertest.Handshakes(t, metricsAddr)
	return all - resumed, resumed
}

// TestTLSPanelsOnARealServer runs the TLS panels' queries, as Grafana sends them with one step
// chosen, against a real Prometheus scraping real REST servers with the servers job's target
// label. The load generator churns connections (5 requests each) in three steps, each on a
// server of its own as the runner starts a fresh one per step: cleartext, TLS with every
// handshake full (--tls-resume=false), and TLS resuming (the default). The handshake rate of each
// kind must peak near what the server's own counters rose by over the step and the other kind
// stay near zero, the CPU per handshake must be a plausible figure, and the cleartext step must
// show no data while its request rate shows that the step was there to be seen.
func TestTLSPanelsOnARealServer(t *testing.T) {
	dir, ca := servertest.TLSCerts(t, tlscert.Options{})
	servers := map[string]servertest.Endpoints{
		"rest-cleartext": servertest.Start(t, servertest.REST),
		"rest-full":      servertest.Start(t, servertest.REST, servertest.WithTLS(dir)),
		"rest-resumed":   servertest.Start(t, servertest.REST, servertest.WithTLS(dir)),
	}
	config := "global:\n  scrape_interval: 1s\n  scrape_timeout: 1s\nscrape_configs:\n  - job_name: servers\n    static_configs:\n"
	for target, ep := range servers {
		config += fmt.Sprintf("      - targets: [%q]\n        labels: {target: %s}\n", ep.Metrics, target)
	}
	url := promtest.Start(t, "", config, promtest.StackFlags...)
	pc := prom.New(url)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if err := pc.WaitUntil(ctx, `sum(up{job="servers"})`, 200*time.Millisecond, func(v float64) bool { return v == float64(len(servers)) }); err != nil {
		t.Fatalf("Prometheus never scraped every server: %v", err)
	}

	const perSec, perConn = 50, 5
	type step struct {
		st                   stepinfo.Step
		start, end           time.Time
		fullRate, resumeRate float64 // what the server's own counters rose by, per second
	}
	exporter := stepinfo.New(url, t.Logf)
	run := func(name, target string, seconds int, tlsArgs ...string) step {
		s := step{st: stepinfo.Step{RunID: "run-tls", Scenario: "tls", Step: name, Repeat: 1, Target: target, Tool: "protobench"}}
		ep := servers[target]
		full0, resumed0 := serverHandshakes(t, ep.Metrics)
		exporter.Begin(ctx, s.st)
		s.start = time.Now()
		drivertest.RunClean(t, true, append([]string{"--target=http://" + ep.Main, "--http-version=1.1",
			"--rate=" + strconv.Itoa(perSec), "--duration=" + strconv.Itoa(seconds) + "s", "--connections=1", "--concurrency=1",
			"--requests-per-connection=" + strconv.Itoa(perConn), "--warmup=0s", "--progress=off"}, tlsArgs...)...)
		s.end = time.Now()
		exporter.Finish(ctx, s.st, record.Record{})
		full1, resumed1 := serverHandshakes(t, ep.Metrics)
		w := s.end.Sub(s.start).Seconds()
		s.fullRate, s.resumeRate = (full1-full0)/w, (resumed1-resumed0)/w
		return s
	}
	cleartext := run("churn-cleartext", "rest-cleartext", 3)
	full := run("churn-full", "rest-full", 6, "--tls-ca="+ca, "--tls-server-name=localhost", "--tls-resume=false")
	resumed := run("churn-resumed", "rest-resumed", 6, "--tls-ca="+ca, "--tls-server-name=localhost")
	last := float64(resumed.end.Unix()) + 2
	if err := pc.WaitUntil(ctx, `min(timestamp(up{job="servers"}))`, 200*time.Millisecond, func(v float64) bool { return v > last }); err != nil {
		t.Fatalf("Prometheus did not scrape past the last step: %v", err)
	}
	// The steps must have driven what they claim, or the checks below prove nothing.
	const want = float64(perSec) / perConn
	if full.fullRate < want/2 || full.resumeRate != 0 || resumed.resumeRate < want/2 || resumed.fullRate > want/4 || cleartext.fullRate+cleartext.resumeRate != 0 {
		t.Fatalf("server counted full/resumed handshakes per second: cleartext step %.1f/%.1f, full %.1f/%.1f, resumed %.1f/%.1f; want about %.0f/s of its kind",
			cleartext.fullRate, cleartext.resumeRate, full.fullRate, full.resumeRate, resumed.fullRate, resumed.resumeRate, want)
	}

	// peak is the highest value of query q over a step's window (a subquery at Grafana's 1 s
	// resolution), with the step and target of its one series; ok is false when q has no data.
	peak := func(s step, runID, name string) (v float64, ok bool) {
		t.Helper()
		labels := s.st.Labels()
		labels["run_id"] = runID
		window := s.end.Sub(s.start)
		for _, q := range QueriesWith(StepValues(labels, window.Seconds())) {
			if q.Name != name {
				continue
			}
			expr := fmt.Sprintf("max_over_time((%s)[%ds:1s])", q.Expr, int(math.Ceil(window.Seconds())))
			got, err := pc.Query(ctx, expr, s.end)
			if err != nil {
				t.Fatalf("%s: %s: %v", s.st, name, err)
			}
			if len(got) == 0 {
				return 0, false
			}
			if len(got) != 1 || got[0].Labels["step"] != s.st.Step || got[0].Labels["target"] != s.st.Target {
				t.Errorf("%s: %s returned %d series, the first %v; want one, of step %s and target %s", s.st, name, len(got), got[0].Labels, s.st.Step, s.st.Target)
			}
			return got[0].Value, true
		}
		t.Fatalf("no dashboard query named %q", name)
		return 0, false
	}
	near := func(s step, name string, want float64) {
		t.Helper()
		got, ok := peak(s, "run-tls", name)
		if !ok || got < want/2 || got > want*2 {
			t.Errorf("%s: %s peaked at %.2f/s (data: %v); the server's counters rose by %.2f/s", s.st, name, got, ok, want)
			return
		}
		t.Logf("%s: %s peaked at %.2f/s; the server's counters rose by %.2f/s", s.st, name, got, want)
	}
	below := func(s step, name string, most float64) {
		t.Helper()
		if got, ok := peak(s, "run-tls", name); ok && got > most {
			t.Errorf("%s: %s peaked at %.2f/s, want at most %.2f/s", s.st, name, got, most)
		}
	}
	plausibleCPU := func(s step, name string) {
		t.Helper()
		got, ok := peak(s, "run-tls", name)
		if !ok || got <= 0 || got > 0.1 {
			t.Errorf("%s: %s = %v s (data: %v), want a handshake's CPU: above 0, below 100 ms", s.st, name, got, ok)
			return
		}
		t.Logf("%s: %s peaked at %.0f µs", s.st, name, got*1e6)
	}

	near(full, handshakesFull, full.fullRate)
	below(full, handshakesResume, 0)
	plausibleCPU(full, cpuFull)
	near(resumed, handshakesResume, resumed.resumeRate)
	// The resuming step's first handshake is full (the client's session cache starts empty).
	below(resumed, handshakesFull, resumed.resumeRate/4)
	plausibleCPU(resumed, cpuResume)
	if _, ok := peak(cleartext, "run-tls", serverRate); !ok {
		t.Errorf("%s: %s has no data: the step was not there to be seen", cleartext.st, serverRate)
	}
	for _, s := range []step{cleartext, full, resumed} {
		for _, name := range []string{handshakesFull, handshakesResume, cpuFull, cpuResume} {
			if s.st == cleartext.st {
				if v, ok := peak(s, "run-tls", name); ok {
					t.Errorf("%s: %s shows %v on a cleartext step, want no data", s.st, name, v)
				}
			}
			if v, ok := peak(s, "no-such-run", name); ok {
				t.Errorf("%s: %s shows %v for a run that never was", s.st, name, v)
			}
		}
	}
}
