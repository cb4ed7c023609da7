package hostproc

import (
	"context"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

func TestFreePortsAreDistinct(t *testing.T) {
	ports, err := FreePorts(8)
	if err != nil {
		t.Fatal(err)
	}
	seen := map[int]bool{}
	for _, p := range ports {
		if p <= 0 || seen[p] {
			t.Fatalf("ports %v: want 8 distinct ones", ports)
		}
		seen[p] = true
	}
	addrs, err := FreeAddrs(2)
	if err != nil || len(addrs) != 2 || !strings.HasPrefix(addrs[0], "127.0.0.1:") {
		t.Errorf("FreeAddrs(2) = %v, %v", addrs, err)
	}
}

// TestWaitHTTP waits through refusals for the 200, and gives up at once when what should answer
// has ended.
func TestWaitHTTP(t *testing.T) {
	var calls atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if calls.Add(1) < 3 {
			w.WriteHeader(http.StatusServiceUnavailable)
		}
	}))
	defer srv.Close()
	if err := WaitHTTP(context.Background(), srv.URL, 10*time.Second, nil); err != nil || calls.Load() != 3 {
		t.Errorf("WaitHTTP: %v after %d calls, want success on the third", err, calls.Load())
	}
	ended := make(chan struct{})
	close(ended)
	began := time.Now()
	err := WaitHTTP(context.Background(), "http://127.0.0.1:1/healthz", time.Minute, ended)
	if err == nil || !strings.Contains(err.Error(), "ended") || time.Since(began) > 5*time.Second {
		t.Errorf("WaitHTTP with ended closed: %v after %s, want an error at once", err, time.Since(began))
	}
}

// TestStartPinsAndStops starts a real process pinned to core 0, waits for its health URL, reads
// its affinity from /proc, and stops it; a process that exits before it is healthy fails at once.
func TestStartPinsAndStops(t *testing.T) {
	if err := CheckTaskset(); err != nil {
		t.Skip(err)
	}
	health := httptest.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}))
	defer health.Close()
	dir := t.TempDir()
	p, err := Start(context.Background(), Server{Core: 0, Env: []string{"PROTOBENCH_HOSTPROC_TEST=1"}, Program: "sleep", Args: []string{"60"},
		Log: filepath.Join(dir, "sleep.log"), Health: health.URL, Timeout: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	// The health URL here is not the program's own, so it may answer before taskset has
	// pinned itself and exec'd the program: wait for the exec.
	proc := "/proc/" + strconv.Itoa(p.Pid())
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		if comm, _ := os.ReadFile(proc + "/comm"); string(comm) == "sleep\n" || time.Now().After(deadline) {
			break
		}
	}
	status, err := os.ReadFile(proc + "/status")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(status), "Cpus_allowed_list:\t0\n") {
		t.Errorf("the process is not pinned to core 0:\n%s", status)
	}
	environ, _ := os.ReadFile(proc + "/environ")
	if !strings.Contains(string(environ), "PROTOBENCH_HOSTPROC_TEST=1") {
		t.Error("the process lacks the environment it was given")
	}
	began := time.Now()
	p.Stop()
	if time.Since(began) > stopGrace {
		t.Errorf("Stop took %s: SIGTERM did not end sleep", time.Since(began))
	}
	if _, err := os.Stat(proc); err == nil {
		t.Error("the process is still there after Stop")
	}

	began = time.Now()
	_, err = Start(context.Background(), Server{Core: 0, Program: "true", Log: filepath.Join(dir, "true.log"), Health: "http://127.0.0.1:1/", Timeout: time.Minute})
	if err == nil || !strings.Contains(err.Error(), "true.log") || time.Since(began) > 5*time.Second {
		t.Errorf("a process that exits at once: %v after %s, want an error naming its log at once", err, time.Since(began))
	}
}
