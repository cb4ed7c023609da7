package genbench

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/protobench/protobench/internal/targets"
	"github.com/protobench/protobench/internal/tlscert"
)

// tlsDir is where a bench run keeps the certificate of its TLS rows (tlscert: a CA and a server
// certificate for localhost and 127.0.0.1, made when the run starts and removed when it ends).
// It is named after the bench's process, not held by the bench, because a server's extra flags
// come from its protocolSpec with nothing but its ports (startServer, process.go).
func tlsDir() string {
	return filepath.Join(os.TempDir(), "protobench-genbench-tls-"+strconv.Itoa(os.Getpid()))
}

// makeCerts makes the run's certificate in tlsDir, and returns its CA's fingerprint and the
// function that removes it.
func makeCerts() (fingerprint string, remove func(), err error) {
	dir := tlsDir()
	set, err := tlscert.Generate(dir, tlscert.Options{})
	if err != nil {
		return "", nil, err
	}
	return set.CAFingerprint, func() { os.RemoveAll(dir) }, nil
}

// serverTLSFlags is a TLS row's protocolSpec.extra: the server's flags for the run's certificate.
func serverTLSFlags(server string) func(ports []int) []string {
	return func([]int) []string { return tlsServerArgs(server, tlsDir()) }
}

// tlsServerArgs are the flags that serve server over TLS with the certificate in dir, offering
// the ALPN protocols its registry entry declares, as a scenario's TLS step does (TLSEnv).
func tlsServerArgs(server, dir string) []string {
	args := []string{"--tls-cert", filepath.Join(dir, tlscert.CertFile), "--tls-key", filepath.Join(dir, tlscert.KeyFile)}
	if t, ok := targets.Lookup(server); ok && t.TLS != nil && len(t.TLS.ALPN) > 0 {
		args = append(args, "--tls-alpn", strings.Join(t.TLS.ALPN, ","))
	}
	return args
}

// alpn is the ALPN protocol every generator must negotiate on a TLS row: h2 for gRPC and
// HTTPS/2, http/1.1 for HTTPS/1.1.
func (s protocolSpec) alpn() string {
	if s.scheme == targets.HTTP && s.httpVersion == targets.HTTP1 {
		return "http/1.1"
	}
	return "h2"
}

// handshake is one label set of the server's protobench_tls_handshakes_total (serverkit): what
// the server negotiated with its clients, counted.
type handshake struct {
	version, cipher, curve, alpn string
	count                        float64
}

// handshakesMetric is the counter a TLS server keeps of its handshakes.
const handshakesMetric = "protobench_tls_handshakes_total"

// parseHandshakes reads the handshake counter's series from a /metrics page (Prometheus' text
// format), resumed and full handshakes together.
func parseHandshakes(r io.Reader) ([]handshake, error) {
	byLabels := map[[4]string]float64{}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if !strings.HasPrefix(line, handshakesMetric+"{") {
			continue
		}
		end := strings.LastIndexByte(line, '}')
		if end < 0 {
			return nil, fmt.Errorf("%q: no closing brace", line)
		}
		labels, err := parseLabels(line[len(handshakesMetric)+1 : end])
		if err != nil {
			return nil, fmt.Errorf("%q: %v", line, err)
		}
		v, err := strconv.ParseFloat(strings.TrimSpace(line[end+1:]), 64)
		if err != nil {
			return nil, fmt.Errorf("%q: %v", line, err)
		}
		byLabels[[4]string{labels["version"], labels["cipher"], labels["curve"], labels["alpn"]}] += v
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	var out []handshake
	for k, n := range byLabels {
		if n > 0 {
			out = append(out, handshake{version: k[0], cipher: k[1], curve: k[2], alpn: k[3], count: n})
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].count > out[j].count })
	return out, nil
}

// parseLabels reads `name="value",...`, the label set of one series in the text format.
func parseLabels(s string) (map[string]string, error) {
	out := map[string]string{}
	for s != "" {
		eq := strings.IndexByte(s, '=')
		if eq < 0 || len(s) < eq+2 || s[eq+1] != '"' {
			return nil, fmt.Errorf("label %q: want name=\"value\"", s)
		}
		name := s[:eq]
		var v strings.Builder
		i := eq + 2
		for ; i < len(s) && s[i] != '"'; i++ {
			if s[i] == '\\' && i+1 < len(s) {
				i++
				switch s[i] {
				case 'n':
					v.WriteByte('\n')
				default:
					v.WriteByte(s[i])
				}
				continue
			}
			v.WriteByte(s[i])
		}
		if i == len(s) {
			return nil, fmt.Errorf("label %s: unterminated value", name)
		}
		out[name] = v.String()
		s = strings.TrimPrefix(s[i+1:], ",")
	}
	return out, nil
}

// readHandshakes scrapes a server's /metrics for its handshakes.
func readHandshakes(ctx context.Context, metricsAddr string) ([]handshake, error) {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+metricsAddr+"/metrics", nil)
	if err != nil {
		return nil, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("GET /metrics: %s", resp.Status)
	}
	return parseHandshakes(resp.Body)
}

// negotiated says what the server negotiated with one generator ("TLS 1.3
// TLS_AES_128_GCM_SHA256 X25519 h2", several joined by "; " when they differ), and fails when a
// handshake took another protocol than wantALPN: a generator on another protocol than ours
// would not measure the same thing. No ALPN at all (wrk sends none) is HTTP/1.1, the protocol a
// server speaks to a client that does not ask.
func negotiated(hs []handshake, wantALPN string) (string, error) {
	if len(hs) == 0 {
		return "", fmt.Errorf("the server counted no TLS handshake")
	}
	var parts []string
	var wrong []string
	for _, h := range hs {
		alpn := h.alpn
		if alpn == "" {
			alpn = "no ALPN"
		}
		parts = append(parts, strings.Join([]string{h.version, h.cipher, h.curve, alpn}, " "))
		if h.alpn != wantALPN && (h.alpn != "" || wantALPN != "http/1.1") && !slices.Contains(wrong, alpn) {
			wrong = append(wrong, alpn)
		}
	}
	summary := strings.Join(parts, "; ")
	if len(wrong) > 0 {
		return summary, fmt.Errorf("negotiated %s over TLS, want ALPN %s (%s)", strings.Join(wrong, ", "), wantALPN, summary)
	}
	return summary, nil
}
