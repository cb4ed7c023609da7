package measure

import (
	"context"
	"fmt"
	"math"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/protobench/protobench/internal/prom"
	"github.com/protobench/protobench/internal/prom/promtest"
	"github.com/protobench/protobench/internal/servertest"
)

// TestWaitSeenWantsThisContainersProcess: a real Prometheus scrapes a real server (its own
// process_start_time_seconds) and a cAdvisor-shaped exposition of one container. WaitSeen passes
// only when the server's process is no older than that container: a scrape of the service's
// previous process (a swarm's old task, still up until its series go stale) is not this run's.
func TestWaitSeenWantsThisContainersProcess(t *testing.T) {
	const id = "0123456789abcdef"
	var started atomic.Uint64 // the container's start, math.Float64bits of Unix seconds
	cadvisor := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		fmt.Fprintf(w, "container_cpu_usage_seconds_total{id=\"/docker/%s\"} 1\n", id)
		if s := math.Float64frombits(started.Load()); s > 0 {
			fmt.Fprintf(w, "container_start_time_seconds{id=\"/docker/%s\"} %f\n", id, s)
		}
	}))
	defer cadvisor.Close()
	ep := servertest.Start(t, servertest.GRPC)
	config := "global:\n  scrape_interval: 1s\n  scrape_timeout: 1s\nscrape_configs:\n" +
		fmt.Sprintf("  - job_name: servers\n    static_configs:\n      - targets: [%q]\n        labels: {target: grpc}\n", ep.Metrics) +
		fmt.Sprintf("  - job_name: cadvisor\n    static_configs:\n      - targets: [%q]\n", strings.TrimPrefix(cadvisor.URL, "http://"))
	pc := prom.New(promtest.Start(t, "", config, promtest.StackFlags...))
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()

	// The server runs in this test's process, so its start is this process's.
	var process float64
	err := pc.WaitUntil(ctx, `max(process_start_time_seconds{job="servers",target="grpc"})`, 200*time.Millisecond,
		func(v float64) bool { process = v; return v > 0 })
	if err != nil {
		t.Fatalf("Prometheus did not scrape the server: %v", err)
	}
	m := NewProm(pc, "", "")
	setStart := func(s float64) {
		t.Helper()
		started.Store(math.Float64bits(s))
		expr := fmt.Sprintf(`max(container_start_time_seconds{id=~".*%s.*"})`, id)
		if err := pc.WaitUntil(ctx, expr, 200*time.Millisecond, func(v float64) bool { return math.Abs(v-s) < 0.01 }); err != nil {
			t.Fatalf("Prometheus did not scrape the container's start %f: %v", s, err)
		}
	}

	setStart(process + 60) // the container is a minute younger than the process scraped
	if err := m.WaitSeen(ctx, id, servertest.GRPC, 3*time.Second); err == nil {
		t.Error("WaitSeen passed on a process a minute older than its container")
	}
	setStart(process + 0.5) // the process started with its container (the clocks' slack)
	if err := m.WaitSeen(ctx, id, servertest.GRPC, 10*time.Second); err != nil {
		t.Errorf("WaitSeen on the container's own process: %v", err)
	}
}
