// Package promtest starts a Prometheus of a test's own: Debian's binary on a free loopback port,
// its data in a temporary folder, stopped by its PID when the test ends. Tests never touch a
// Prometheus they did not start.
package promtest

import (
	"context"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/protobench/protobench/internal/prom"
)

// Bin is the Prometheus binary; PROMETHEUS overrides it.
func Bin() string {
	if b := os.Getenv("PROMETHEUS"); b != "" {
		return b
	}
	return "/usr/bin/prometheus"
}

// StackFlags are the flags of compose's Prometheus that change what it accepts and how it scrapes:
// the remote-write receiver (k6, the runner's step series) and native histograms (k6's trends;
// with them Prometheus also asks targets for protobuf first). Tests that stand in for the stack's
// Prometheus start theirs with these; internal/compose checks that compose has each of them.
var StackFlags = []string{"--web.enable-remote-write-receiver", "--enable-feature=native-histograms"}

// FreeAddr is a loopback host:port nothing listens on at the time of the call.
func FreeAddr(t testing.TB) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
}

// Start runs Prometheus with config (a prometheus.yml; "" gives a 1 s global scrape interval and
// no jobs) and extra flags, on addr or a free address when addr is "", and returns its base URL
// once it is ready. It skips the test when the binary is missing, and logs Prometheus's own
// output when the test fails. A free address can be taken between picking it and Prometheus
// binding it (tests start Prometheus side by side), so a Prometheus that exits before it is
// ready is started again on another one; one that is ready is checked to be ours, not
// another's answering on that port.
func Start(t testing.TB, addr, config string, extra ...string) string {
	t.Helper()
	bin := Bin()
	if _, err := os.Stat(bin); err != nil {
		t.Skipf("%s not installed (apt-get install -y prometheus): %v", bin, err)
	}
	if config == "" {
		config = "global:\n  scrape_interval: 1s\n"
	}
	pick := addr == ""
	for attempt := 1; ; attempt++ {
		if pick {
			addr = FreeAddr(t)
		}
		url, exited := start(t, bin, addr, config, extra)
		if !exited {
			return url
		}
		if !pick || attempt == 3 {
			t.Fatalf("Prometheus on %s exited before it was ready (its log follows at the end)", addr)
		}
		t.Logf("Prometheus on %s exited before it was ready (address taken?); trying another address", addr)
	}
}

// start runs one Prometheus on addr and waits until it is ready, or has exited.
func start(t testing.TB, bin, addr, config string, extra []string) (url string, exited bool) {
	t.Helper()
	dir := t.TempDir()
	cfg := filepath.Join(dir, "prometheus.yml")
	if err := os.WriteFile(cfg, []byte(config), 0o644); err != nil {
		t.Fatal(err)
	}
	logFile, err := os.Create(filepath.Join(dir, "prometheus.log"))
	if err != nil {
		t.Fatal(err)
	}
	args := append([]string{"--config.file=" + cfg, "--storage.tsdb.path=" + filepath.Join(dir, "data"),
		"--web.listen-address=" + addr}, extra...)
	cmd := exec.Command(bin, args...)
	cmd.Stdout, cmd.Stderr = logFile, logFile
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { cmd.Wait(); close(done) }()
	t.Cleanup(func() {
		cmd.Process.Kill()
		<-done
		logFile.Close()
		if t.Failed() {
			b, _ := os.ReadFile(logFile.Name())
			t.Logf("prometheus log (%s):\n%s", addr, b)
		}
	})
	url = "http://" + addr
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	ready := make(chan error, 1)
	go func() { ready <- prom.New(url).Ready(ctx) }()
	select {
	case <-done:
		cancel()
		return url, true
	case err := <-ready:
		if err != nil {
			t.Fatalf("Prometheus at %s: %v", url, err)
		}
	}
	// Ready was answered; if ours exited meanwhile, it was another Prometheus that answered.
	select {
	case <-done:
		return url, true
	case <-time.After(200 * time.Millisecond):
	}
	return url, false
}
