package loadgen

import (
	"context"
	"net"
	"net/http"
	"sort"
	"sync"
	"time"

	hdr "github.com/HdrHistogram/hdrhistogram-go"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// LatencyBuckets are the live histograms' upper bounds in seconds: 10 µs to the histogram's 60 s
// ceiling, each 4 % above the last. histogram_quantile interpolates within the bucket that holds
// the quantile, so a dashboard's p99 is within 4 % of the exact one, plus the 0.4 % of the
// interval histograms it is fed from. Classic buckets were measured against native histograms
// (README.md, "Live metrics"): they came closer, and keep the dashboards' queries classic.
var LatencyBuckets = prometheus.ExponentialBucketsRange(10e-6, 60, 400)

// LiveLabels are the label names of every live series (requests_total adds code). They are
// bounded: no URL, no error text.
var LiveLabels = []string{"target", "method", "scenario", "step", "run_id"}

// LiveMetrics is the generator's /metrics, scraped by Prometheus while a step runs. The engine
// feeds it once a second from the merged interval histograms, so it costs nothing per request:
// the hot path never touches a Prometheus object.
//
// The service-time histogram is exported in the open model only. In the closed model a request
// is sent when it is due, so its service time is its latency, and a second copy of the same 400
// buckets every second doubled the generator's scrape and Prometheus' intake on the core the
// generator loads from; the dashboards read the latency histogram for closed steps instead.
type LiveMetrics struct {
	mu         sync.Mutex
	labels     []string // values for LiveLabels
	open       bool     // open model: service time differs from latency and is exported
	codes      map[string]int64
	latency    promHist
	service    promHist
	inflight   float64
	lagSeconds float64

	requestsDesc, latencyDesc, serviceDesc, inflightDesc, lagDesc *prometheus.Desc
}

type promHist struct {
	counts []uint64 // per bucket, not cumulative
	count  uint64
	sum    float64
}

// NewLiveMetrics returns live metrics whose series carry these label values (see LiveLabels), for
// a run in the open model (open) or the closed one.
func NewLiveMetrics(target, method string, open bool, labels map[string]string) *LiveMetrics {
	vals := []string{target, method, labels["scenario"], labels["step"], labels["run_id"]}
	m := &LiveMetrics{
		labels:       vals,
		open:         open,
		codes:        map[string]int64{},
		latency:      promHist{counts: make([]uint64, len(LatencyBuckets))},
		service:      promHist{counts: make([]uint64, len(LatencyBuckets))},
		requestsDesc: prometheus.NewDesc("protobench_client_requests_total", "Requests finished by the load generator, by result code (OK or the error code).", append(append([]string{}, LiveLabels...), "code"), nil),
		latencyDesc:  prometheus.NewDesc("protobench_client_latency_seconds", "Request latency from the intended send time (corrected for coordinated omission).", LiveLabels, nil),
		serviceDesc:  prometheus.NewDesc("protobench_client_service_time_seconds", "Request latency from the actual send time.", LiveLabels, nil),
		inflightDesc: prometheus.NewDesc("protobench_client_inflight", "Requests in flight.", LiveLabels, nil),
		lagDesc:      prometheus.NewDesc("protobench_client_scheduler_lag_seconds", "Longest wait past an intended send time in the last second (open model; 0 when the generator keeps up).", LiveLabels, nil),
	}
	return m
}

// update folds one interval into the cumulative series.
func (m *LiveMetrics) update(lat, svc *hdr.Histogram, codes map[string]int64, inflight int64, lag time.Duration) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.latency.add(lat)
	if m.open {
		m.service.add(svc)
	}
	for c, n := range codes {
		m.codes[c] = n
	}
	m.inflight = float64(inflight)
	m.lagSeconds = lag.Seconds()
}

func (p *promHist) add(h *hdr.Histogram) {
	if h.TotalCount() == 0 {
		return
	}
	for _, bar := range h.Distribution() {
		if bar.Count == 0 {
			continue
		}
		// A bar's middle, not its top: the fine buckets would otherwise inherit its width as bias.
		v := float64(bar.From+bar.To) / 2e6
		i := sort.SearchFloat64s(LatencyBuckets, v)
		if i < len(p.counts) {
			p.counts[i] += uint64(bar.Count)
		}
		p.count += uint64(bar.Count)
		p.sum += v * float64(bar.Count)
	}
}

func (p *promHist) buckets() map[float64]uint64 {
	out := make(map[float64]uint64, len(LatencyBuckets))
	var cum uint64
	for i, b := range LatencyBuckets {
		cum += p.counts[i]
		out[b] = cum
	}
	return out
}

// Describe implements prometheus.Collector.
func (m *LiveMetrics) Describe(ch chan<- *prometheus.Desc) {
	ch <- m.requestsDesc
	ch <- m.latencyDesc
	ch <- m.serviceDesc
	ch <- m.inflightDesc
	ch <- m.lagDesc
}

// Collect implements prometheus.Collector.
func (m *LiveMetrics) Collect(ch chan<- prometheus.Metric) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for code, n := range m.codes {
		ch <- prometheus.MustNewConstMetric(m.requestsDesc, prometheus.CounterValue, float64(n), append(append([]string{}, m.labels...), code)...)
	}
	if _, ok := m.codes[CodeOK]; !ok {
		ch <- prometheus.MustNewConstMetric(m.requestsDesc, prometheus.CounterValue, 0, append(append([]string{}, m.labels...), CodeOK)...)
	}
	ch <- prometheus.MustNewConstHistogram(m.latencyDesc, m.latency.count, m.latency.sum, m.latency.buckets(), m.labels...)
	if m.open {
		ch <- prometheus.MustNewConstHistogram(m.serviceDesc, m.service.count, m.service.sum, m.service.buckets(), m.labels...)
	}
	ch <- prometheus.MustNewConstMetric(m.inflightDesc, prometheus.GaugeValue, m.inflight, m.labels...)
	ch <- prometheus.MustNewConstMetric(m.lagDesc, prometheus.GaugeValue, m.lagSeconds, m.labels...)
}

// MetricsServer serves /metrics (the live metrics plus Go and process collectors, which include
// the generator's own CPU) and /healthz.
type MetricsServer struct {
	srv  *http.Server
	ln   net.Listener
	done chan struct{}
}

// metricsHandler is the generator's /metrics handler, gzipped when Prometheus asks only if
// compress. ServeMetrics does not compress: the answer crosses a local or compose network, and
// gzip took a scrape from 1.2 to 1.9 ms of the generator's CPU, on the core it loads from
// (BenchmarkLiveMetricsScrape).
func metricsHandler(m *LiveMetrics, compress bool) http.Handler {
	reg := prometheus.NewRegistry()
	reg.MustRegister(m, collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return promhttp.HandlerFor(reg, promhttp.HandlerOpts{DisableCompression: !compress})
}

// ServeMetrics starts serving m on addr (host:port, ":9102").
func ServeMetrics(addr string, m *LiveMetrics) (*MetricsServer, error) {
	mux := http.NewServeMux()
	mux.Handle("/metrics", metricsHandler(m, false))
	mux.HandleFunc("/healthz", func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte("ok\n")) })
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, err
	}
	s := &MetricsServer{srv: &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}, ln: ln, done: make(chan struct{})}
	go func() {
		defer close(s.done)
		// A serve error leaves the run without live metrics; the result file is the record.
		_ = s.srv.Serve(ln)
	}()
	return s, nil
}

// Addr is the address the server listens on.
func (s *MetricsServer) Addr() string { return s.ln.Addr().String() }

// Close stops the server.
func (s *MetricsServer) Close() error {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	err := s.srv.Shutdown(ctx)
	<-s.done
	return err
}
