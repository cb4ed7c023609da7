package servertest

import (
	"bufio"
	"net/http"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/protobench/protobench/internal/tlscert"
)

// TLSCerts makes a CA and a server certificate (for localhost) in a temporary directory, as a
// run makes them for its results folder, and returns the directory (for WithTLS) and the CA file.
func TLSCerts(t testing.TB, opts tlscert.Options) (dir, caFile string) {
	t.Helper()
	dir = t.TempDir()
	if _, err := tlscert.Generate(dir, opts); err != nil {
		t.Fatal(err)
	}
	return dir, filepath.Join(dir, tlscert.CAFile)
}

// MetricLines are the lines of a server's /metrics that start with prefix.
func MetricLines(t testing.TB, metricsAddr, prefix string) []string {
	t.Helper()
	resp, err := http.Get("http://" + metricsAddr + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	var out []string
	for sc.Scan() {
		if strings.HasPrefix(sc.Text(), prefix) {
			out = append(out, sc.Text())
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// MetricSum sums the samples of a server's metric (prefix: the name and "{") whose line
// contains every one of labels (e.g. `resumed="true"`); by, when not empty, also sums them by
// that label's value.
func MetricSum(t testing.TB, metricsAddr, prefix string, by string, labels ...string) (float64, map[string]float64) {
	t.Helper()
	var sum float64
	byValue := map[string]float64{}
lines:
	for _, line := range MetricLines(t, metricsAddr, prefix) {
		for _, l := range labels {
			if !strings.Contains(line, l) {
				continue lines
			}
		}
		v, err := strconv.ParseFloat(line[strings.LastIndexByte(line, ' ')+1:], 64)
		if err != nil {
			t.Fatalf("%q: %v", line, err)
		}
		sum += v
		if by == "" {
			continue
		}
		i := strings.Index(line, by+`="`)
		if i < 0 {
			t.Fatalf("%q has no %s label", line, by)
		}
		val := line[i+len(by)+2:]
		byValue[val[:strings.IndexByte(val, '"')]] += v
	}
	return sum, byValue
}

// TLS handshake counters of our Go servers (serverkit).
const (
	HandshakesMetric        = "protobench_tls_handshakes_total{"
	HandshakeFailuresMetric = "protobench_tls_handshake_failures_total{"
)

// Handshakes reads a server's own handshake counters: all of them, and the resumed ones.
func Handshakes(t testing.TB, metricsAddr string) (all, resumed float64) {
	t.Helper()
	all, _ = MetricSum(t, metricsAddr, HandshakesMetric, "")
	resumed, _ = MetricSum(t, metricsAddr, HandshakesMetric, "", `resumed="true"`)
	return all, resumed
}
