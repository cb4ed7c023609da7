// Command cadvisor is a small cAdvisor built on the github.com/google/cadvisor library, for
// machines where the upstream gcr.io/cadvisor/cadvisor image cannot be pulled: cAdvisor's own
// cmd module is not published on the Go module proxy, so this main wires the same pieces the
// upstream binary does (memory storage, container manager, docker provider, Prometheus
// collector) and serves only /metrics and /healthz, which is all protobench scrapes.
//
// It accepts the upstream flag names that matter here (--port, --listen_ip,
// --prometheus_endpoint, --housekeeping_interval, --docker_only, --enable_metrics,
// --disable_metrics, --store_container_labels, --whitelisted_container_labels,
// --storage_duration, -logtostderr, ...), so one compose command line works with both images.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/google/cadvisor/cache/memory"
	"github.com/google/cadvisor/container"
	v2 "github.com/google/cadvisor/info/v2"
	"github.com/google/cadvisor/manager"
	"github.com/google/cadvisor/metrics"
	"github.com/google/cadvisor/utils/sysfs"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"

	// The docker provider is the only one protobench needs: every benchmarked process runs in a
	// compose container. The raw provider (root cgroup) is registered by the manager itself.
	_ "github.com/google/cadvisor/container/docker/install"
)

var (
	listenIP           = flag.String("listen_ip", "", "IP to listen on, defaults to all IPs")
	port               = flag.Int("port", 8080, "port to listen on")
	prometheusEndpoint = flag.String("prometheus_endpoint", "/metrics", "endpoint to expose Prometheus metrics on")
	storageDuration    = flag.Duration("storage_duration", 2*time.Minute, "how long to keep data stored in memory")
	storeLabels        = flag.Bool("store_container_labels", true, "convert container labels and environment variables into labels on Prometheus metrics")
	whitelistedLabels  = flag.String("whitelisted_container_labels", "", "comma-separated container labels to export when --store_container_labels=false")
	envWhitelist       = flag.String("env_metadata_whitelist", "", "comma-separated environment variable prefixes to collect for containers")
	rawCgroupWhitelist = flag.String("raw_cgroup_prefix_whitelist", "", "comma-separated cgroup path prefixes collected even with --docker_only")
	perfEventsConfig   = flag.String("perf_events_config", "", "path to a JSON perf events configuration; empty disables perf events")
	resctrlInterval    = flag.Duration("resctrl_interval", 0, "resctrl mon groups updating interval; 0 disables it")
	printVersion       = flag.Bool("version", false, "print the version and exit")

	// disabledMetrics mirrors upstream's default list, so an unset flag behaves like upstream.
	disabledMetrics = container.MetricSet{
		container.MemoryNumaMetrics:              struct{}{},
		container.NetworkTcpUsageMetrics:         struct{}{},
		container.NetworkUdpUsageMetrics:         struct{}{},
		container.NetworkAdvancedTcpUsageMetrics: struct{}{},
		container.ProcessSchedulerMetrics:        struct{}{},
		container.ProcessMetrics:                 struct{}{},
		container.HugetlbUsageMetrics:            struct{}{},
		container.ReferencedMemoryMetrics:        struct{}{},
		container.CPUTopologyMetrics:             struct{}{},
		container.ResctrlMetrics:                 struct{}{},
		container.CPUSetMetrics:                  struct{}{},
	}
	enabledMetrics = container.MetricSet{}
)

// version is the cAdvisor library version this binary is built against; the Dockerfile sets it.
var version = "unknown"

func init() {
	all := container.AllMetrics.String()
	flag.Var(&disabledMetrics, "disable_metrics", "comma-separated list of metrics to disable (replaces the default list); options: "+all)
	flag.Var(&enabledMetrics, "enable_metrics", "comma-separated list of metrics to enable; overrides --disable_metrics; options: "+all)
}

func main() {
	klog.InitFlags(nil)
	flag.Parse()
	defer klog.Flush()
	if *printVersion {
		fmt.Printf("cAdvisor (protobench build) on library %s\n", version)
		return
	}
	if err := run(); err != nil {
		klog.Errorf("cadvisor: %v", err)
		klog.Flush()
		os.Exit(1)
	}
}

func run() error {
	included := enabledMetrics
	if len(included) == 0 {
		included = container.AllMetrics.Difference(disabledMetrics)
	}
	klog.Infof("cadvisor %s: enabled metrics %s", version, included.String())

	storage := memory.New(*storageDuration, nil)
	// Collectors for application metrics are not used; the client only needs to exist.
	collectorClient := &http.Client{Timeout: 10 * time.Second}
	// The two lists go in as strings.Split gives them, like upstream: the raw factory reads
	// element 0 of the whitelist, so an empty flag must be [""] and never an empty slice.
	mgr, err := manager.New(storage, sysfs.NewRealSysFs(), manager.HousekeepingConfigFlags, included,
		collectorClient, strings.Split(*rawCgroupWhitelist, ","), strings.Split(*envWhitelist, ","), *perfEventsConfig, *resctrlInterval)
	if err != nil {
		return fmt.Errorf("create manager: %w", err)
	}

	labels := metrics.DefaultContainerLabels
	if !*storeLabels {
		labels = metrics.BaseContainerLabels(splitList(*whitelistedLabels))
	}
	registry := prometheus.NewRegistry()
	// One sample per container, named by cgroup path, recursively: what upstream serves.
	opts := v2.RequestOptions{IdType: v2.TypeName, Count: 1, Recursive: true}
	registry.MustRegister(
		metrics.NewPrometheusCollector(mgr, labels, included, clock.RealClock{}, opts),
		metrics.NewPrometheusMachineCollector(mgr, included),
		collectors.NewGoCollector(),
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
	)

	mux := http.NewServeMux()
	mux.Handle(*prometheusEndpoint, promhttp.HandlerFor(registry, promhttp.HandlerOpts{ErrorHandling: promhttp.ContinueOnError}))
	mux.HandleFunc("/healthz", func(w http.ResponseWriter, _ *http.Request) {
		_, _ = w.Write([]byte("ok"))
	})

	if err := mgr.Start(); err != nil {
		return fmt.Errorf("start manager: %w", err)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()

	srv := &http.Server{
		Addr:              net.JoinHostPort(*listenIP, strconv.Itoa(*port)),
		Handler:           mux,
		ReadHeaderTimeout: 10 * time.Second,
	}
	errs := make(chan error, 1)
	go func() { errs <- srv.ListenAndServe() }()
	klog.Infof("cadvisor: serving %s on %s", *prometheusEndpoint, srv.Addr)

	select {
	case err := <-errs:
		_ = mgr.Stop()
		return fmt.Errorf("serve: %w", err)
	case <-ctx.Done():
	}
	shutdownCtx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := srv.Shutdown(shutdownCtx); err != nil && !errors.Is(err, http.ErrServerClosed) {
		klog.Warningf("cadvisor: shutdown: %v", err)
	}
	return mgr.Stop()
}

// splitList turns a comma-separated flag into its non-empty items.
func splitList(s string) []string {
	var out []string
	for _, item := range strings.Split(s, ",") {
		if item = strings.TrimSpace(item); item != "" {
			out = append(out, item)
		}
	}
	return out
}
