package serverkit

import (
	"net/http"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// DurationBuckets are the request-duration histogram's upper bounds in seconds. They span 10 µs
// (a loopback unary call on a fast server) to 10 s (a 10 MB payload on a saturated one) in
// 1-2.5-5 steps, so every benchmark lands in buckets that still tell percentiles apart.
var DurationBuckets = []float64{
	10e-6, 25e-6, 50e-6,
	100e-6, 250e-6, 500e-6,
	1e-3, 2.5e-3, 5e-3,
	10e-3, 25e-3, 50e-3,
	100e-3, 250e-3, 500e-3,
	1, 2.5, 5, 10,
}

// Metrics holds one server's Prometheus metrics. It uses its own registry, never the global
// one, so that several servers can run in one test process without colliding.
type Metrics struct {
	protocol string
	registry *prometheus.Registry
	requests *prometheus.CounterVec
	duration *prometheus.HistogramVec
	messages *prometheus.CounterVec
	bytes    *prometheus.CounterVec
	encoded  *prometheus.CounterVec

	// Children are cached per (method, code) and pattern: WithLabelValues hashes the labels on
	// every call, and the request path should pay for that once, not per request.
	mu       sync.RWMutex
	reqCache map[[2]string]prometheus.Counter
	durCache map[string]prometheus.Observer
	msgCache map[string][2]prometheus.Counter
	encCache map[[2]string][2]prometheus.Counter

	tlsOnce sync.Once
	tls     *tlsMetrics

	// handlerCPU is burnt by every ObserveRequest and ObserveMessage (--handler-cpu).
	handlerCPU handlerCPU
}

// NewMetrics registers the contract's server metrics for protocol on a fresh registry, together
// with the Go runtime and process collectors.
func NewMetrics(protocol string) *Metrics {
	m := &Metrics{
		protocol: protocol,
		registry: prometheus.NewRegistry(),
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "protobench_server_requests_total",
			Help: "Requests handled, by protocol, contract method and protocol-native result code.",
		}, []string{"protocol", "method", "code"}),
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "protobench_server_request_duration_seconds",
			Help:    "Time from request decoded to response handed to the transport, in seconds.",
			Buckets: DurationBuckets,
		}, []string{"protocol", "method"}),
		messages: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "protobench_server_messages_total",
			Help: "Messages on one-way and streaming patterns (pipeline, pubsub, stream).",
		}, []string{"protocol", "pattern"}),
		bytes: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "protobench_server_message_bytes_total",
			Help: "Payload bytes of the messages counted by protobench_server_messages_total.",
		}, []string{"protocol", "pattern"}),
		encoded: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "protobench_server_encoded_messages_total",
			Help: "Requests and replies by content encoding (identity, gzip), counted per call: a stream counts once, with its first message's encoding.",
		}, []string{"protocol", "direction", "encoding"}),
		reqCache: map[[2]string]prometheus.Counter{},
		durCache: map[string]prometheus.Observer{},
		msgCache: map[string][2]prometheus.Counter{},
		encCache: map[[2]string][2]prometheus.Counter{},
	}
	m.registry.MustRegister(m.requests, m.duration, m.messages, m.bytes, m.encoded,
		collectors.NewGoCollector(),
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return m
}

// Protocol is the value of the protocol label.
func (m *Metrics) Protocol() string { return m.protocol }

// Registry is the private registry, for protocol packages that want to add their own series.
func (m *Metrics) Registry() *prometheus.Registry { return m.registry }

// Handler serves the registry in the Prometheus exposition format.
func (m *Metrics) Handler() http.Handler {
	return promhttp.HandlerFor(m.registry, promhttp.HandlerOpts{Registry: m.registry})
}

// ObserveRequest counts one request with its result code and records how long it took. code is
// the protocol's own result (a gRPC code name, an HTTP status, OK/ERR), which keeps it bounded.
// It first burns --handler-cpu: every Go server calls it once per request, on the goroutine
// that served the request, so it is the one place the injected cost reaches them all alike.
func (m *Metrics) ObserveRequest(method, code string, d time.Duration) {
	m.handlerCPU.burn()
	key := [2]string{method, code}
	m.mu.RLock()
	c, ok1 := m.reqCache[key]
	o, ok2 := m.durCache[method]
	m.mu.RUnlock()
	if !ok1 || !ok2 {
		m.mu.Lock()
		if c, ok1 = m.reqCache[key]; !ok1 {
			c = m.requests.WithLabelValues(m.protocol, method, code)
			m.reqCache[key] = c
		}
		if o, ok2 = m.durCache[method]; !ok2 {
			o = m.duration.WithLabelValues(m.protocol, method)
			m.durCache[method] = o
		}
		m.mu.Unlock()
	}
	c.Inc()
	o.Observe(d.Seconds())
}

// ObserveMessage counts one message of n payload bytes on a pattern (pipeline, pubsub, stream).
// A message burns --handler-cpu as a request does.
func (m *Metrics) ObserveMessage(pattern string, n int) {
	m.handlerCPU.burn()
	m.mu.RLock()
	cs, ok := m.msgCache[pattern]
	m.mu.RUnlock()
	if !ok {
		m.mu.Lock()
		if cs, ok = m.msgCache[pattern]; !ok {
			cs = [2]prometheus.Counter{m.messages.WithLabelValues(m.protocol, pattern), m.bytes.WithLabelValues(m.protocol, pattern)}
			m.msgCache[pattern] = cs
		}
		m.mu.Unlock()
	}
	cs[0].Inc()
	cs[1].Add(float64(n))
}

// Encodings and directions of protobench_server_encoded_messages_total.
const (
	EncodingIdentity = "identity"
	EncodingGzip     = "gzip"
	DirectionRequest = "request"
	DirectionReply   = "reply"
)

// ObserveEncodings counts one call's request and reply by content encoding ("" counts as
// identity), so that a run can say what was compressed from the server's side.
func (m *Metrics) ObserveEncodings(request, reply string) {
	if request == "" {
		request = EncodingIdentity
	}
	if reply == "" {
		reply = EncodingIdentity
	}
	key := [2]string{request, reply}
	m.mu.RLock()
	cs, ok := m.encCache[key]
	m.mu.RUnlock()
	if !ok {
		m.mu.Lock()
		if cs, ok = m.encCache[key]; !ok {
			cs = [2]prometheus.Counter{
				m.encoded.WithLabelValues(m.protocol, DirectionRequest, request),
				m.encoded.WithLabelValues(m.protocol, DirectionReply, reply),
			}
			m.encCache[key] = cs
		}
		m.mu.Unlock()
	}
	cs[0].Inc()
	cs[1].Inc()
}

// Message patterns used as the pattern label.
const (
	PatternPipeline = "pipeline"
	PatternPubSub   = "pubsub"
	PatternStream   = "stream"
)

// tlsMetrics registers the TLS handshake series on first use, so cleartext servers do not show
// them.
func (m *Metrics) tlsMetrics() *tlsMetrics {
	m.tlsOnce.Do(func() { m.tls = newTLSMetrics(m.registry) })
	return m.tls
}
