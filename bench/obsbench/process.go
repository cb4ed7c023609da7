package obsbench

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"syscall"
	"time"
)

func freeAddr() (string, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer l.Close()
	return l.Addr().String(), nil
}

// server is the gRPC reference server, built from ./servers/grpc and pinned to its core.
type server struct {
	cmd           *exec.Cmd
	exited        chan struct{}
	addr, metrics string
}

func startServer(ctx context.Context, root string, o options) (*server, error) {
	bin := filepath.Join(o.outDir, "protobench-grpc-server")
	build := exec.CommandContext(ctx, "go", "build", "-o", bin, "./servers/grpc")
	build.Dir = root
	if out, err := build.CombinedOutput(); err != nil {
		return nil, fmt.Errorf("go build ./servers/grpc: %v\n%s", err, out)
	}
	addr, err := freeAddr()
	if err != nil {
		return nil, err
	}
	metrics, err := freeAddr()
	if err != nil {
		return nil, err
	}
	s := &server{addr: addr, metrics: metrics, exited: make(chan struct{})}
	s.cmd = exec.Command("taskset", "-c", strconv.Itoa(o.serverCore), bin, "--listen", addr, "--metrics-listen", metrics)
	s.cmd.Env = append(os.Environ(), "GOMAXPROCS=1")
	logPath := filepath.Join(o.outDir, "server.log")
	logFile, err := os.Create(logPath)
	if err != nil {
		return nil, err
	}
	s.cmd.Stdout, s.cmd.Stderr = logFile, logFile
	if err := s.cmd.Start(); err != nil {
		logFile.Close()
		return nil, err
	}
	go func() {
		_ = s.cmd.Wait()
		logFile.Close()
		close(s.exited)
	}()
	if err := waitHTTP(ctx, "http://"+metrics+"/healthz", 20*time.Second, nil); err != nil {
		s.stop()
		return nil, fmt.Errorf("gRPC server not healthy (log: %s): %w", logPath, err)
	}
	return s, nil
}

func (s *server) stop() {
	_ = s.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-s.exited:
	case <-time.After(5 * time.Second):
		_ = s.cmd.Process.Kill()
		<-s.exited
	}
}

// waitHTTP waits until url answers 200. ended, when not nil, is the result of the process that
// should answer: its end stops the wait at once.
func waitHTTP(ctx context.Context, url string, timeout time.Duration, ended <-chan loadResult) error {
	deadline := time.Now().Add(timeout)
	for {
		resp, err := http.Get(url)
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%s did not answer 200 within %s (last error: %v)", url, timeout, err)
		}
		select {
		case r := <-ended:
			return fmt.Errorf("it ended before %s answered: %v", url, r.err)
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// runLoad runs protobench's generator from its image, as a run's loadgen container: on the client
// core with a 1-cpu quota, in a container of its own, so that it weighs against the stack's
// containers on a shared core as it does in a run (a process outside Docker's cgroup would weigh
// against all of Docker's containers together). It serves its live metrics where Prometheus
// scrapes them, and its JSON result lands in the raw folder.
func runLoad(ctx context.Context, image string, o options, target, metrics, out, cidfile string) (trial, error) {
	absDir, err := filepath.Abs(filepath.Dir(out))
	if err != nil {
		return trial{}, err
	}
	args := []string{"run", "--rm", "--network", "host", "--cpuset-cpus", strconv.Itoa(o.clientCore), "--cpus", "1", "--label", o.label,
		"--cidfile", cidfile, "--user", fmt.Sprintf("%d:%d", os.Getuid(), os.Getgid()), "-v", absDir + ":/raw", "--entrypoint", "protobench", image, "load",
		"--target", "grpc://" + target, "--method", "GetUser", "--connections", strconv.Itoa(o.connections), "--concurrency", strconv.Itoa(o.concurrency),
		"--duration", o.duration.String(), "--warmup", o.warmup.String(), "--out", "/raw/" + filepath.Base(out), "--progress", "off",
		"--metrics-listen", metrics, "--label", "scenario=bench-observability"}
	cmd := exec.CommandContext(ctx, "docker", args...)
	cmd.Stdout = io.Discard
	stderr, err := os.Create(out + ".stderr")
	if err != nil {
		return trial{}, err
	}
	defer stderr.Close()
	cmd.Stderr = stderr
	if err := cmd.Run(); err != nil {
		return trial{}, fmt.Errorf("protobench load: %v (see %s.stderr)", err, out)
	}
	b, err := os.ReadFile(out)
	if err != nil {
		return trial{}, err
	}
	var r struct {
		ThroughputRPS float64 `json:"throughput_rps"`
		Requests      int64   `json:"requests"`
		Errors        int64   `json:"errors"`
		DurationS     float64 `json:"duration_s"`
		LatencyMs     struct {
			P99 float64 `json:"p99"`
		} `json:"latency_ms"`
		StartUnix float64       `json:"start_unix"`
		Series    []seriesPoint `json:"series"`
	}
	if err := json.Unmarshal(b, &r); err != nil {
		return trial{}, fmt.Errorf("%s: %w", out, err)
	}
	if r.ThroughputRPS <= 0 || r.DurationS <= 0 || math.IsNaN(r.LatencyMs.P99) {
		return trial{}, fmt.Errorf("%s: no measurement (throughput %.1f over %.1f s)", out, r.ThroughputRPS, r.DurationS)
	}
	return trial{RPS: r.ThroughputRPS, P99Ms: r.LatencyMs.P99, Requests: r.Requests, Errors: r.Errors, Seconds: r.DurationS,
		startUnix: r.StartUnix, series: r.Series}, nil
}
