package serverkit

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"sync/atomic"
	"syscall"
	"time"
)

// Service is a protocol server whose listeners are already bound. Serve blocks until Shutdown
// (returning nil then) or a fatal error. Shutdown stops accepting, lets in-flight calls finish
// until ctx is done, then closes whatever is left.
type Service interface {
	// Addrs names each bound address: "main" always, plus protocol extras ("pull", "pub").
	Addrs() map[string]string
	Serve() error
	Shutdown(ctx context.Context) error
}

// Builder binds a protocol server's listeners from its resolved configuration. Binding happens
// here, before Serve, so that an occupied port fails the start instead of a later goroutine.
type Builder func(cfg Config, m *Metrics) (Service, error)

// Spec describes one protocol server to Main and Start.
type Spec struct {
	Protocol      string // protocol label and /config value: grpc, rest, netrpc, zeromq
	DefaultListen string // e.g. ":50051"
	// Declare adds the protocol's knobs to fs and returns the Builder that reads them after
	// parsing. It may be nil for a server without knobs of its own.
	Declare func(fs *Flags) Builder
	// Gzip is true for a server that can compress its replies (--compression gzip).
	Gzip bool
}

// NetServer is the shape of a server on a net.Listener, which Bind turns into a Service.
type NetServer interface {
	Serve(ln net.Listener) error
	Shutdown(ctx context.Context) error
}

// Bind listens on addr (TCP) and wraps srv so that Serve uses that listener.
func Bind(addr string, srv NetServer) (Service, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("listen %s: %w", addr, err)
	}
	return &netService{ln: ln, srv: srv}, nil
}

// BindConfig listens on cfg.Listen and, when cfg.TLS is set, terminates TLS in front of srv:
// every Go server gets TLS from this one place, chosen by its configuration, never by code of
// its own. srv sees *tls.Conn connections whose handshake is complete (net/http reads the
// negotiated ALPN protocol from them to pick HTTP/2).
func BindConfig(cfg Config, m *Metrics, srv NetServer) (Service, error) {
	if !cfg.TLS.Enabled() {
		return Bind(cfg.Listen, srv)
	}
	if m == nil {
		m = NewMetrics(cfg.Protocol)
	}
	ln, err := net.Listen("tcp", cfg.Listen)
	if err != nil {
		return nil, fmt.Errorf("listen %s: %w", cfg.Listen, err)
	}
	tl, err := newTLSListener(ln, cfg.TLS, m)
	if err != nil {
		ln.Close()
		return nil, err
	}
	return &netService{ln: tl, srv: srv}, nil
}

type netService struct {
	ln  net.Listener
	srv NetServer
}

func (s *netService) Addrs() map[string]string {
	return map[string]string{"main": s.ln.Addr().String()}
}
func (s *netService) Serve() error                       { return s.srv.Serve(s.ln) }
func (s *netService) Shutdown(ctx context.Context) error { return s.srv.Shutdown(ctx) }

// ParseConfig resolves spec's flags from args and the environment (lookup). The returned Builder
// is the protocol's, ready to be called with the Config.
func ParseConfig(spec Spec, args []string, lookup func(string) (string, bool)) (Config, Builder, error) {
	fs := NewFlags("protobench-"+spec.Protocol+"-server", lookup)
	cfg := Config{Protocol: spec.Protocol}
	fs.common(&cfg, spec.DefaultListen)
	var build Builder
	if spec.Declare != nil {
		build = spec.Declare(fs)
	}
	if err := fs.parse(args); err != nil {
		if errors.Is(err, ErrHelp) {
			fs.Usage(os.Stderr)
		}
		return cfg, nil, err
	}
	if (cfg.TLS.CertFile == "") != (cfg.TLS.KeyFile == "") {
		return cfg, nil, fmt.Errorf("--tls-cert %q and --tls-key %q: want both (TLS) or neither (cleartext)", cfg.TLS.CertFile, cfg.TLS.KeyFile)
	}
	switch {
	case cfg.Compression == CompressionGzip && !spec.Gzip:
		return cfg, nil, fmt.Errorf("--compression gzip: the %s server cannot compress; want none", spec.Protocol)
	case cfg.Compression != CompressionNone && cfg.Compression != CompressionGzip:
		return cfg, nil, fmt.Errorf("--compression %q: want none or gzip", cfg.Compression)
	}
	if cfg.MaxPayloadBytes <= 0 {
		return cfg, nil, fmt.Errorf("--max-payload-bytes: want a positive number of bytes, got %d", cfg.MaxPayloadBytes)
	}
	if err := checkHandlerCPU(cfg.HandlerCPU); err != nil {
		return cfg, nil, err
	}
	for _, a := range []struct{ flag, value string }{{"--listen", cfg.Listen}, {"--metrics-listen", cfg.MetricsListen}} {
		if _, _, err := net.SplitHostPort(a.value); err != nil {
			return cfg, nil, fmt.Errorf("%s %q: want host:port, such as :8080 or 127.0.0.1:0", a.flag, a.value)
		}
	}
	cfg.Knobs = fs.knobs()
	return cfg, build, nil
}

// Running is a started server: its protocol listeners and its metrics listener.
type Running struct {
	cfg     Config
	svc     Service
	metrics *Metrics
	log     *slog.Logger
	mln     net.Listener
	msrv    *http.Server
	ready   atomic.Bool
	done    chan struct{}
	err     error
}

// Start binds the metrics listener and the protocol's listeners, starts serving, and marks the
// server healthy once its main listener is accepting.
func Start(cfg Config, build Builder, log *slog.Logger) (*Running, error) {
	if log == nil {
		log = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	r := &Running{cfg: cfg, metrics: NewMetrics(cfg.Protocol), log: log, done: make(chan struct{})}
	r.metrics.handlerCPU = handlerCPU(cfg.HandlerCPU)
	if cfg.HandlerCPU > 0 {
		spinRoundsPerNs() // calibrated before the first request, not during it
	}
	mln, err := net.Listen("tcp", cfg.MetricsListen)
	if err != nil {
		return nil, fmt.Errorf("--metrics-listen %s: %w", cfg.MetricsListen, err)
	}
	r.mln = mln
	svc, err := build(cfg, r.metrics)
	if err != nil {
		mln.Close()
		return nil, err
	}
	r.svc = svc
	mux := http.NewServeMux()
	mux.Handle("/metrics", r.metrics.Handler())
	mux.HandleFunc("/healthz", r.healthz)
	mux.HandleFunc("/config", r.config)
	r.msrv = &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	go func() {
		if err := r.msrv.Serve(mln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			log.Error("metrics listener stopped", "err", err)
		}
	}()
	go func() {
		r.err = svc.Serve()
		r.ready.Store(false)
		close(r.done)
	}()
	// The listener is bound, so connections queue in the kernel even before Serve's first
	// Accept: from here on a client will be served.
	r.ready.Store(true)
	cpu := ReadCPUInfo()
	log.Info("serving", "protocol", cfg.Protocol, "tls", cfg.TLS.Enabled(), "compression", cfg.Compression, "addrs", svc.Addrs(), "metrics", mln.Addr().String(),
		"max_payload_bytes", cfg.MaxPayloadBytes, "handler_cpu", cfg.HandlerCPU.String())
	log.Info("cpu budget", "gomaxprocs", cpu.GOMAXPROCS, "num_cpu", cpu.NumCPU, "cpu_quota_cores", cpu.QuotaCores,
		"quota_source", cpu.QuotaSource, "expected_gomaxprocs", cpu.ExpectedGOMAXPROCS, "gomaxprocs_env", cpu.GOMAXPROCSEnv)
	if cpu.GOMAXPROCSEnv == "" && cpu.GOMAXPROCS != cpu.ExpectedGOMAXPROCS {
		log.Warn("GOMAXPROCS differs from what the CPU quota implies", "gomaxprocs", cpu.GOMAXPROCS, "expected", cpu.ExpectedGOMAXPROCS)
	}
	return r, nil
}

// Addrs returns the protocol's bound addresses ("main", and "pull"/"pub" for ZeroMQ).
func (r *Running) Addrs() map[string]string { return r.svc.Addrs() }

// MetricsAddr is the bound address of the metrics listener.
func (r *Running) MetricsAddr() string { return r.mln.Addr().String() }

// Metrics is the server's metrics set.
func (r *Running) Metrics() *Metrics { return r.metrics }

// Done is closed when the protocol server's Serve has returned.
func (r *Running) Done() <-chan struct{} { return r.done }

// Err is Serve's result, valid after Done is closed.
func (r *Running) Err() error { return r.err }

// Stop turns /healthz unhealthy, shuts the protocol server down gracefully (bounded by the
// configured shutdown timeout and ctx), then closes the metrics listener.
func (r *Running) Stop(ctx context.Context) error {
	r.ready.Store(false)
	ctx, cancel := context.WithTimeout(ctx, r.cfg.ShutdownTimeout)
	defer cancel()
	err := r.svc.Shutdown(ctx)
	select {
	case <-r.done:
	case <-ctx.Done():
	}
	mctx, mcancel := context.WithTimeout(context.Background(), time.Second)
	defer mcancel()
	if merr := r.msrv.Shutdown(mctx); merr != nil {
		r.msrv.Close()
	}
	return err
}

func (r *Running) healthz(w http.ResponseWriter, _ *http.Request) {
	if !r.ready.Load() {
		http.Error(w, "not serving", http.StatusServiceUnavailable)
		return
	}
	io.WriteString(w, "ok\n")
}

// ConfigDoc is the JSON document served on /config.
type ConfigDoc struct {
	Protocol        string            `json:"protocol"`
	Implementation  string            `json:"implementation"`
	Addrs           map[string]string `json:"addrs"`
	MaxPayloadBytes int               `json:"max_payload_bytes"`
	// HandlerCPU is the injected CPU per request (--handler-cpu), "0s" when none: a run that
	// measured a slowed server says so.
	HandlerCPU string `json:"handler_cpu"`
	CPUInfo
	Knobs []Knob `json:"knobs"`
	// TLS is true when the main listener terminates TLS; ALPN lists what it offers.
	TLS  bool     `json:"tls"`
	ALPN []string `json:"tls_alpn,omitempty"`
	// Compression is the server's setting: none or gzip.
	Compression string `json:"compression"`
}

func (r *Running) config(w http.ResponseWriter, _ *http.Request) {
	doc := ConfigDoc{
		Protocol:        r.cfg.Protocol,
		Implementation:  "go",
		Addrs:           r.svc.Addrs(),
		MaxPayloadBytes: r.cfg.MaxPayloadBytes,
		HandlerCPU:      r.cfg.HandlerCPU.String(),
		CPUInfo:         ReadCPUInfo(),
		Knobs:           r.cfg.Knobs,
		TLS:             r.cfg.TLS.Enabled(),
		ALPN:            r.cfg.TLS.ALPN,
		Compression:     r.cfg.Compression,
	}
	if doc.Knobs == nil {
		doc.Knobs = []Knob{}
	}
	w.Header().Set("Content-Type", "application/json")
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	enc.Encode(doc)
}

// Probe GETs http://127.0.0.1:<port of metricsListen>/healthz and reports whether it answered 200.
func Probe(metricsListen string, timeout time.Duration) error {
	_, port, err := net.SplitHostPort(metricsListen)
	if err != nil {
		return fmt.Errorf("--metrics-listen %q: want host:port", metricsListen)
	}
	c := &http.Client{Timeout: timeout}
	resp, err := c.Get("http://" + net.JoinHostPort("127.0.0.1", port) + "/healthz")
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("healthz answered %s", resp.Status)
	}
	return nil
}

// Main is a server process: parse flags and env, answer --probe, or start, wait for SIGTERM or
// SIGINT, and stop gracefully. It exits 2 on usage errors and 1 on runtime errors.
func Main(spec Spec) {
	os.Exit(run(spec, os.Args[1:]))
}

func run(spec Spec, args []string) int {
	log := slog.New(slog.NewTextHandler(os.Stderr, nil))
	cfg, build, err := ParseConfig(spec, args, os.LookupEnv)
	if errors.Is(err, ErrHelp) {
		return 0
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "protobench-%s-server: %v\n", spec.Protocol, err)
		return 2
	}
	if cfg.Probe {
		if err := Probe(cfg.MetricsListen, 2*time.Second); err != nil {
			fmt.Fprintf(os.Stderr, "probe: %v\n", err)
			return 1
		}
		return 0
	}
	if build == nil {
		fmt.Fprintf(os.Stderr, "protobench-%s-server: spec has no builder\n", spec.Protocol)
		return 2
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	r, err := Start(cfg, build, log)
	if err != nil {
		log.Error("start failed", "err", err)
		return 1
	}
	select {
	case <-ctx.Done():
		log.Info("signal received, stopping gracefully", "timeout", cfg.ShutdownTimeout.String())
		stop() // a second signal kills the process the default way
		if err := r.Stop(context.Background()); err != nil {
			log.Warn("graceful stop cut short", "err", err)
		}
		log.Info("stopped")
		return 0
	case <-r.Done():
		r.Stop(context.Background())
		if err := r.Err(); err != nil {
			log.Error("server failed", "err", err)
			return 1
		}
		return 0
	}
}
