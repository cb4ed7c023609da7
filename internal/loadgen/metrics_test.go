package loadgen

import (
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// BenchmarkLiveMetricsScrape is what one Prometheus scrape of the live metrics costs the
// generator: collecting and encoding both latency histograms, gzipped as Prometheus asks.
func BenchmarkLiveMetricsScrape(b *testing.B) {
	m := NewLiveMetrics("grpc", "GetUser", map[string]string{"scenario": "grpc-vs-rest", "step": "conn-64", "run_id": "20260101T000000Z"})
	lat := newSeriesHistogram()
	for us := int64(30); us < 200_000; us = us*21/20 + 1 {
		recordDuration(lat, time.Duration(us)*time.Microsecond)
	}
	m.update(lat, lat, map[string]int64{CodeOK: 1}, 0, 0)
	reg := prometheus.NewRegistry()
	reg.MustRegister(m)
	h := promhttp.HandlerFor(reg, promhttp.HandlerOpts{})
	req := httptest.NewRequest("GET", "/metrics", nil)
	req.Header.Set("Accept", "text/plain;version=0.0.4")
	req.Header.Set("Accept-Encoding", "gzip")
	var size int
	for b.Loop() {
		w := httptest.NewRecorder()
		h.ServeHTTP(w, req)
		if w.Code != http.StatusOK {
			b.Fatal(w.Code)
		}
		size = w.Body.Len()
	}
	b.ReportMetric(float64(size), "gzip-bytes/scrape")
}
