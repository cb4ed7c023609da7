package loadcmd

import (
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/protobench/protobench/internal/contract"
	"github.com/protobench/protobench/internal/loadgen"
	"github.com/protobench/protobench/internal/record"
	"github.com/protobench/protobench/internal/servertest"
)

// TestLiveMetrics scrapes the generator's /metrics after a run in each model. The service-time
// histogram is there in the open model only: in the closed model it would repeat the latency one.
func TestLiveMetrics(t *testing.T) {
	ep := servertest.Start(t, servertest.GRPC)
	for _, tc := range []struct {
		name        string
		model       []string
		wantService bool
	}{
		{"closed", []string{"--connections", "1", "--concurrency", "2"}, false},
		{"open", []string{"--connections", "1", "--concurrency", "2", "--rate", "300"}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			args := append([]string{"--target", "grpc://" + ep.Main, "--duration", "1500ms", "--warmup", "0s",
				"--label", "scenario=smoke", "--label", "step=s1", "--label", "run_id=r1"}, tc.model...)
			cfg, _, err := loadgen.ParseArgs(args, io.Discard)
			if err != nil {
				t.Fatal(err)
			}
			live, ms := serveLiveMetrics(t, cfg)
			res, err := loadgen.Run(context.Background(), cfg, loadgen.RunOptions{Live: live})
			if err != nil {
				t.Fatal(err)
			}
			resp, err := http.Get("http://" + ms.Addr() + "/metrics")
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			b, _ := io.ReadAll(resp.Body)
			text := string(b)
			for _, want := range []string{
				`protobench_client_requests_total{code="OK",method="GetUser",run_id="r1",scenario="smoke",step="s1",target="grpc"}`,
				`protobench_client_latency_seconds_bucket{method="GetUser",run_id="r1",scenario="smoke",step="s1",target="grpc",le="` + strconv.FormatFloat(loadgen.LatencyBuckets[100], 'g', -1, 64) + `"}`,
				`protobench_client_inflight{`,
				`protobench_client_scheduler_lag_seconds{`,
			} {
				if !strings.Contains(text, want) {
					t.Errorf("/metrics lacks %s", want)
				}
			}
			if got := strings.Contains(text, `protobench_client_service_time_seconds_count`); got != tc.wantService {
				t.Errorf("service-time histogram exported: %v, want %v", got, tc.wantService)
			}
			if res.Requests == 0 {
				t.Error("no requests")
			}
		})
	}
}

// serveLiveMetrics serves the live metrics of a run of cfg on a free local port until the test
// ends, as `protobench load --metrics-listen` does.
func serveLiveMetrics(t *testing.T, cfg *loadgen.Config) (*loadgen.LiveMetrics, *loadgen.MetricsServer) {
	t.Helper()
	live := loadgen.NewLiveMetrics(cfg.TargetName, cfg.Method, cfg.Open(), cfg.Labels)
	ms, err := loadgen.ServeMetrics("127.0.0.1:0", live)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = ms.Close() })
	return live, ms
}

// TestStoppedServerLeavesNothingOut runs the open model against a loopback server that stops
// answering partway: the requests it holds and the ones the schedule could no longer send must
// reach the result as incomplete, flagged, and in the corrected latency.
func TestStoppedServerLeavesNothingOut(t *testing.T) {
	var stopped atomic.Bool
	release := make(chan struct{})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := json.Marshal(contract.UserByID(contract.RequestUserID))
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if stopped.Load() {
			<-release // never answers while the run lasts
			return
		}
		w.Header().Set("Content-Type", "application/json")
		w.Write(body)
	})}
	go srv.Serve(ln)
	t.Cleanup(func() { close(release); srv.Close() })

	const rate, seconds = 200, 3
	cfg, _, err := loadgen.ParseArgs([]string{
		"--target", "http://" + ln.Addr().String(), "--rate", strconv.Itoa(rate), "--duration", strconv.Itoa(seconds) + "s",
		"--warmup", "0s", "--connections", "1", "--concurrency", "4",
	}, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	go func() {
		time.Sleep(1500 * time.Millisecond)
		stopped.Store(true)
	}()
	live := loadgen.NewLiveMetrics(cfg.TargetName, cfg.Method, cfg.Open(), cfg.Labels)
	res, _ := loadgen.Run(context.Background(), cfg, loadgen.RunOptions{DrainTimeout: time.Second, Live: live})
	if res == nil {
		t.Fatal("no result")
	}
	scheduled := int64(rate * seconds)
	// A dashboard reads the live histogram: it must hold the same requests as the result,
	// the never-sent ones included.
	if got := liveLatencyCount(t, live); got != uint64(scheduled) {
		t.Errorf("live latency histogram holds %d requests, want all %d scheduled", got, scheduled)
	}
	if got := res.Requests + res.Incomplete; got != scheduled {
		t.Errorf("requests %d + incomplete %d = %d, want every scheduled request (%d) accounted for", res.Requests, res.Incomplete, got, scheduled)
	}
	if res.Incomplete < scheduled/4 || res.Unsent == 0 || res.Unsent > res.Incomplete {
		t.Errorf("incomplete %d (unsent %d) of %d scheduled, want the second half of the run (and the unsent part of it)", res.Incomplete, res.Unsent, scheduled)
	}
	if !contains(res.Flags, record.FlagIncomplete) {
		t.Errorf("flags %v, want %s", res.Flags, record.FlagIncomplete)
	}
	if got := res.LatencyHistogram().TotalCount(); got != scheduled {
		t.Errorf("latency histogram holds %d requests, want all %d scheduled", got, scheduled)
	}
	// The first unanswered request was due about 1.5 s before the schedule ended, and the run ends
	// a drain timeout after that: the worst latency counts all of it.
	if res.LatencyMs.Max < 2000 {
		t.Errorf("latency max %.1f ms, want the stall counted to the end of the run (over 2 s)", res.LatencyMs.Max)
	}
	if res.ServiceTimeMs.Max >= 1000 {
		t.Errorf("service time max %.1f ms, want only answered requests in it", res.ServiceTimeMs.Max)
	}
	if res.ThroughputRPS > rate*0.75 {
		t.Errorf("throughput %.1f rps, want only the answered requests (about half of %d)", res.ThroughputRPS, rate)
	}
}

// liveLatencyCount is the sample count of the live latency histogram, as a scrape would read it.
func liveLatencyCount(t *testing.T, live *loadgen.LiveMetrics) uint64 {
	t.Helper()
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(live)
	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range families {
		if f.GetName() == "protobench_client_latency_seconds" {
			var n uint64
			for _, m := range f.GetMetric() {
				n += m.GetHistogram().GetSampleCount()
			}
			return n
		}
	}
	t.Fatal("no protobench_client_latency_seconds in the live metrics")
	return 0
}
