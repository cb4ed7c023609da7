package k6

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/protobench/protobench/internal/prom/promtest"

	"github.com/protobench/protobench/internal/prom"
	"github.com/protobench/protobench/internal/tool"
)

// TestRemoteWriteReachesPrometheus runs the real k6 image with Args against a real REST server
// and a real Prometheus with its remote-write receiver on, and finds k6's series there under the
// step's labels. It needs docker, the k6 image and a REST server, so it only runs when asked:
//
//	PROTOBENCH_K6_IMAGE=protobench/k6:latest REST_ADDR=127.0.0.1:50181 \
//	  flock /tmp/pb/docker.lock go test -count=1 -run TestRemoteWriteReachesPrometheus ./internal/tool/k6
//
// where REST_ADDR is `go run ./servers/rest --listen ...` on loopback (k6 runs with the host's
// network) and Prometheus is Debian's /usr/bin/prometheus (or $PROMETHEUS), started here.
func TestRemoteWriteReachesPrometheus(t *testing.T) {
	image, restAddr := os.Getenv("PROTOBENCH_K6_IMAGE"), os.Getenv("REST_ADDR")
	if image == "" || restAddr == "" {
		t.Skip("set PROTOBENCH_K6_IMAGE and REST_ADDR to run k6 against a real Prometheus")
	}
	promURL := startPrometheus(t)

	raw := t.TempDir()
	if err := os.Chmod(raw, 0o777); err != nil { // k6's image may run as another user
		t.Fatal(err)
	}
	runID := "rw-" + strconv.FormatInt(time.Now().UnixNano(), 36)
	inv := tool.Invocation{
		Target: "rest", Address: restAddr, Scheme: "http", Method: "GetUser", Model: "closed",
		Connections: 2, Concurrency: 1, Duration: 3 * time.Second,
		RawDir: "/raw", RawPrefix: "rw", PrometheusURL: promURL,
		Labels: map[string]string{"scenario": "remote-write-test", "step": "getuser", "run_id": runID},
	}
	a := Adapter{}
	if err := a.Check(inv); err != nil {
		t.Fatal(err)
	}
	for name, data := range a.InputFiles(inv) {
		if err := os.WriteFile(filepath.Join(raw, name), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	scripts, err := filepath.Abs("scripts")
	if err != nil {
		t.Fatal(err)
	}
	args := append([]string{"run", "--rm", "--network", "host", "--user", strconv.Itoa(os.Getuid()),
		"-v", raw + ":/raw", "-v", scripts + ":" + ScriptDir + ":ro", image}, a.Args(inv)...)
	out, err := exec.Command("docker", args...).CombinedOutput()
	if err != nil {
		t.Fatalf("docker %v: %v\n%s", args, err, out)
	}
	summary, err := os.ReadFile(filepath.Join(raw, SummaryFile(inv)))
	if err != nil {
		t.Fatalf("%v; k6 said:\n%s", err, out)
	}
	rec, err := a.Parse(inv, tool.Raw{Stdout: out, Files: map[string][]byte{SummaryFile(inv): summary}})
	if err != nil || rec.Requests == 0 {
		t.Fatalf("Parse: %+v, %v", rec, err)
	}

	// k6 pushes its last batch when the test ends: by then Prometheus holds the final counter.
	c := prom.New(promURL)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	sel := fmt.Sprintf(`{run_id=%q, step="getuser", target="rest", tool="k6"}`, runID)
	var iterations float64
	for {
		v, ok, err := c.Scalar(ctx, "sum(max_over_time(k6_iterations_total"+sel+"[1m]))", time.Time{})
		if err == nil && ok && v > 0 {
			iterations = v
			break
		}
		if ctx.Err() != nil {
			t.Fatalf("no k6_iterations_total%s in Prometheus (last error %v)", sel, err)
		}
		time.Sleep(500 * time.Millisecond)
	}
	if int64(iterations) != rec.Requests {
		t.Errorf("Prometheus counted %v iterations, k6's summary %d", iterations, rec.Requests)
	}
	// k6's trends arrive as native histograms: the final one, pushed with the final counter, holds
	// every request of the summary, and its p99 lies within the summary's p90 and max. (Debian's
	// Prometheus 2.42 has no *_over_time for histograms, hence instant queries.)
	count, ok, err := c.Scalar(ctx, "histogram_count(sum(k6_http_req_duration_seconds"+sel+"))", time.Time{})
	if err != nil || !ok || int64(count) != rec.Requests {
		t.Errorf("histogram_count(k6_http_req_duration_seconds%s) = %v (%v, %v), summary %d requests", sel, count, ok, err, rec.Requests)
	}
	p99, ok, err := c.Scalar(ctx, "histogram_quantile(0.99, sum(k6_http_req_duration_seconds"+sel+"))", time.Time{})
	// histogram_quantile interpolates within a bucket, so where p90 and p99 share one the
	// estimate can fall below p90: 10 % of slack covers a bucket at Prometheus's coarsest
	// default resolution (factor 1.1).
	if err != nil || !ok || !(p99*1000 >= rec.LatencyMs.P90/1.1) || !(p99*1000 <= rec.LatencyMs.Max*1.1) {
		t.Errorf("p99 of k6_http_req_duration_seconds%s: %v s (%v, %v); summary p90 %v ms, max %v ms", sel, p99, ok, err, rec.LatencyMs.P90, rec.LatencyMs.Max)
	}
	samples, err := c.Query(ctx, "k6_iterations_total"+sel, time.Time{})
	if err == nil && len(samples) > 0 {
		b, _ := json.Marshal(samples[0].Labels)
		t.Logf("iterations %v (summary %d), histogram count %v, p99 %v s (summary p99 %v ms); labels %s", iterations, rec.Requests, count, p99, rec.LatencyMs.P99, b)
	}
}

// startPrometheus runs a Prometheus of the test's own with the compose stack's flags.
func startPrometheus(t *testing.T) string {
	t.Helper()
	return promtest.Start(t, "", "", promtest.StackFlags...)
}
