package loadcmd

import (
	"context"
	"fmt"
	"io"
	"math"
	"net/http"
	"testing"
	"time"

	hdr "github.com/HdrHistogram/hdrhistogram-go"

	"github.com/protobench/protobench/internal/prom/promtest"

	"github.com/protobench/protobench/internal/loadgen"
	"github.com/protobench/protobench/internal/prom"
)

// startPrometheus runs a Prometheus of the test's own, with the compose stack's flags (so it
// scrapes in protobuf, as the stack's does), scraping target every second, and returns its client
// once target has been scraped.
func startPrometheus(t *testing.T, target string) *prom.Client {
	t.Helper()
	cfg := fmt.Sprintf("global:\n  scrape_interval: 1s\n  scrape_timeout: 1s\nscrape_configs:\n  - job_name: loadgen\n    static_configs:\n      - targets: ['%s']\n", target)
	c := prom.New(promtest.Start(t, "", cfg, promtest.StackFlags...))
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := c.WaitUntil(ctx, `up{job="loadgen"}`, 200*time.Millisecond, func(v float64) bool { return v == 1 }); err != nil {
		t.Fatalf("prometheus never scraped %s: %v", target, err)
	}
	return c
}

// TestDashboardP99MatchesHdr scrapes the generator's live metrics into a real Prometheus while it
// drives a real gRPC server, and holds a dashboard's p99, histogram_quantile over the run's
// window, to within 5 % of the HdrHistogram p99 of the same requests. It runs in the open model,
// the one where the generator exports both histograms (latency from the intended send, service
// time from the actual one); the latency histogram is fed the same way in the closed model.
func TestDashboardP99MatchesHdr(t *testing.T) {
	_, addr := startServerProcess(t, buildServer(t, "grpc"))
	// No warm-up, so that the live histograms and the result hold the same requests.
	cfg, _, err := loadgen.ParseArgs([]string{
		"--target", "grpc://" + addr, "--duration", "8s", "--warmup", "0s",
		"--connections", "2", "--concurrency", "4", "--rate", "2000",
	}, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	live, ms := serveLiveMetrics(t, cfg)
	pc := startPrometheus(t, ms.Addr())
	// Prometheus has scraped the empty histograms, so an increase from here holds every request.
	before := time.Now()
	res, err := loadgen.Run(context.Background(), cfg, loadgen.RunOptions{Live: live})
	if err != nil {
		t.Fatal(err)
	}
	// Wait for the scrape that holds the last request, rather than for a time: on a loaded
	// machine a scrape can come late.
	lat, svc := res.LatencyHistogram(), res.ServiceHistogram()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := pc.WaitUntil(ctx, "sum(protobench_client_latency_seconds_count)", 200*time.Millisecond, func(v float64) bool { return v >= float64(lat.TotalCount()) }); err != nil {
		t.Fatalf("prometheus never held the run's %d requests: %v", lat.TotalCount(), err)
	}
	logScrapeSize(t, ms.Addr())
	at := time.Now()
	window := fmt.Sprintf("%ds", int(math.Ceil(at.Sub(before).Seconds()))+2)
	for _, h := range []struct {
		metric string
		hist   *hdr.Histogram
	}{
		{"protobench_client_latency_seconds", lat},
		{"protobench_client_service_time_seconds", svc},
	} {
		q := fmt.Sprintf("histogram_quantile(0.99, sum by (le) (increase(%s_bucket[%s])))", h.metric, window)
		v, ok, err := pc.Scalar(context.Background(), q, at)
		if err != nil || !ok {
			t.Fatalf("%s: %v (empty %v)", q, err, !ok)
		}
		got := v * 1000
		// Prometheus and HdrHistogram rank a quantile differently (q·n against round(q·n)), so
		// the dashboard's p99 is held to 5 % of the HdrHistogram values one rank either side
		// (loadgen.RankNeighbours), not of its p99 alone.
		below, above := loadgen.RankNeighbours(h.hist, 99)
		p99, lo, hi := float64(h.hist.ValueAtPercentile(99))/1000, float64(below)/1000, float64(above)/1000
		diff := 0.0
		if got < lo {
			diff = got/lo - 1
		} else if got > hi {
			diff = got/hi - 1
		}
		t.Logf("%s: prometheus p99 %.4f ms, hdr p99 %.4f ms (one rank either side %.4f to %.4f), %+.2f %% off that range", h.metric, got, p99, lo, hi, diff*100)
		if math.Abs(diff) > 0.05 {
			t.Errorf("%s: dashboard p99 %.4f ms is %+.1f %% off the HdrHistogram p99 %.4f ms (%.4f to %.4f one rank either side; want within 5 %%)", h.metric, got, diff*100, p99, lo, hi)
		}
	}
}

// logScrapeSize logs what one scrape of the generator costs, in bytes and time, in the text
// format Prometheus asks for by default.
func logScrapeSize(t *testing.T, addr string) {
	req, _ := http.NewRequest("GET", "http://"+addr+"/metrics", nil)
	req.Header.Set("Accept", "text/plain;version=0.0.4")
	const fetches = 20
	var n int64
	start := time.Now()
	for range fetches {
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		n, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
	}
	t.Logf("one scrape: %d bytes, %v", n, time.Since(start)/fetches)
}
