package stepinfo

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"testing"
	"time"

	"github.com/protobench/protobench/internal/prom/promtest"

	"github.com/protobench/protobench/internal/prom"
	"github.com/protobench/protobench/internal/record"
)

// startPrometheus runs a Prometheus of the test's own with the compose stack's flags.
func startPrometheus(t *testing.T) string {
	t.Helper()
	return promtest.Start(t, "", "", promtest.StackFlags...)
}

func TestExporterWritesStepWindowAndFigures(t *testing.T) {
	url := startPrometheus(t)
	ctx := context.Background()
	var logged []string
	e := New(url, func(f string, a ...any) { logged = append(logged, fmt.Sprintf(f, a...)) })
	s := Step{RunID: "20260101T000000Z-test", Scenario: "test", Step: "servers", Target: "grpc", Tool: "protobench", Repeat: 2}

	began := time.Now()
	e.Begin(ctx, s)
	time.Sleep(3200 * time.Millisecond)
	rec := record.Record{
		ThroughputRPS: 1234.5, Errors: 3, Requests: 300, CPUMicrosPerRequest: 42,
		LatencyMs: record.Latency{P99: 2.5},
		StartUnix: float64(began.Add(500*time.Millisecond).UnixNano()) / 1e9,
		EndUnix:   float64(time.Now().UnixNano()) / 1e9,
	}
	e.Finish(ctx, s, rec)
	finished := time.Now()
	if len(logged) > 0 {
		t.Fatalf("exporter reported failures: %v", logged)
	}

	pc := prom.New(url)
	sel := `{run_id="20260101T000000Z-test",scenario="test",step="servers",repeat="2",target="grpc",tool="protobench"}`
	mid := began.Add(2 * time.Second)
	n, ok, err := pc.Scalar(ctx, "count_over_time("+InfoMetric+sel+"[1m])", finished.Add(time.Second))
	if err != nil || !ok || n < 3 {
		t.Errorf("step_info samples over the step: n=%v ok=%v err=%v, want >= 3 (one a second)", n, ok, err)
	}
	if v, ok, err := pc.Scalar(ctx, InfoMetric+sel, mid); err != nil || !ok || v != 1 {
		t.Errorf("step_info mid-step = %v ok=%v err=%v, want 1", v, ok, err)
	}
	// The staleness marker ends the series: right after the step it is gone, not held for the
	// 5-minute lookback.
	if _, ok, err := pc.Scalar(ctx, InfoMetric+sel, finished.Add(500*time.Millisecond)); err != nil || ok {
		t.Errorf("step_info still present after Finish (ok=%v err=%v): the staleness marker did not end it", ok, err)
	}
	for metric, want := range map[string]float64{RPSMetric: 1234.5, P99Metric: 0.0025, ErrorsMetric: 3, CPUPerReqMetric: 42, ErrorFracMetric: 0.01} {
		v, ok, err := pc.Scalar(ctx, metric+sel, mid)
		if err != nil || !ok || v != want {
			t.Errorf("%s mid-window = %v ok=%v err=%v, want %v", metric, v, ok, err, want)
		}
	}
}

func TestWriterReportsRejection(t *testing.T) {
	// A Prometheus without the receiver flag answers 404; the error must say so, not vanish.
	srv := http.NewServeMux()
	srv.HandleFunc("/api/v1/write", func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, "remote write receiver needs to be enabled with --web.enable-remote-write-receiver", http.StatusNotFound)
	})
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go http.Serve(l, srv)
	defer l.Close()
	err = NewWriter("http://"+l.Addr().String()).Write(context.Background(), []Series{{Name: "x", Samples: []Sample{{time.Now(), 1}}}})
	if err == nil {
		t.Fatal("no error from a rejected write")
	}
	t.Log(err)
}

func TestComposeEnvNames(t *testing.T) {
	env := Step{RunID: "r", Scenario: "s", Step: "st", Target: "grpc", Tool: "k6", Repeat: 1}.ComposeEnv()
	want := map[string]string{"PROTOBENCH_LABEL_RUN_ID": "r", "PROTOBENCH_LABEL_SCENARIO": "s", "PROTOBENCH_LABEL_STEP": "st",
		"PROTOBENCH_LABEL_REPEAT": "1", "PROTOBENCH_LABEL_TARGET": "grpc", "PROTOBENCH_LABEL_TOOL": "k6"}
	if len(env) != len(want) {
		t.Errorf("env = %v, want %v", env, want)
	}
	for k, v := range want {
		if env[k] != v {
			t.Errorf("%s = %q, want %q", k, env[k], v)
		}
	}
}
