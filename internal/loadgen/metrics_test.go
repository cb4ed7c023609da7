package loadgen

import (
	"net/http"
	"net/http/httptest"
	"testing"
	"time"
)

// BenchmarkLiveMetricsScrape is what one Prometheus scrape of /metrics costs the generator, on
// the core it loads from: the handler ServeMetrics serves (the latency histogram, the service-time
// one in the open model, the Go and process collectors), asked as Prometheus 2.42 asks (protobuf
// with native histograms enabled, text without), with and without gzip.
func BenchmarkLiveMetricsScrape(b *testing.B) {
	for _, model := range []string{"closed", "open"} {
		m := NewLiveMetrics("grpc", "GetUser", model == "open", map[string]string{"scenario": "grpc-vs-rest", "step": "conn-64", "run_id": "20260101T000000Z"})
		lat := newSeriesHistogram()
		for us := int64(30); us < 200_000; us = us*21/20 + 1 {
			recordDuration(lat, time.Duration(us)*time.Microsecond)
		}
		m.update(lat, lat, map[string]int64{CodeOK: 1}, 0, 0)
		b.Run(model, func(b *testing.B) { benchmarkScrape(b, m) })
	}
}

func benchmarkScrape(b *testing.B, m *LiveMetrics) {
	// Prometheus prefers protobuf once native histograms are enabled (as the stack does, for k6's
	// remote write), text otherwise: both as 2.42 asks.
	accepts := []struct{ name, header string }{
		{"protobuf", "application/vnd.google.protobuf;proto=io.prometheus.client.MetricFamily;encoding=delimited,application/openmetrics-text;version=1.0.0;q=0.8,application/openmetrics-text;version=0.0.1;q=0.75,text/plain;version=0.0.4;q=0.5,*/*;q=0.1"},
		{"text", "application/openmetrics-text;version=1.0.0,application/openmetrics-text;version=0.0.1;q=0.75,text/plain;version=0.0.4;q=0.5,*/*;q=0.1"},
	}
	for _, accept := range accepts {
		for _, gzip := range []bool{true, false} {
			name := accept.name + "/identity"
			if gzip {
				name = accept.name + "/gzip"
			}
			b.Run(name, func(b *testing.B) {
				h := metricsHandler(m, gzip)
				req := httptest.NewRequest("GET", "/metrics", nil)
				req.Header.Set("Accept", accept.header)
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
				b.ReportMetric(float64(size), "bytes/scrape")
			})
		}
	}
}
