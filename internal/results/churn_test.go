package results

import (
	"bytes"
	"strings"
	"testing"

	"github.com/protobench/protobench/internal/record"
)

func TestWriteChurn(t *testing.T) {
	tlsState := func(hsPerSec, handshakes, resumed float64) *record.TLSState {
		return &record.TLSState{Version: "TLS 1.3", Cipher: "TLS_AES_128_GCM_SHA256", Curve: "X25519", ALPN: "h2",
			Handshakes: handshakes, Resumed: resumed, HandshakesPerSec: hsPerSec, CPUUsFull: 700, CPUUsResumed: 100}
	}
	recs := []record.Record{
		// N = 1: 1,000 req/s, 1,000 handshakes/s, half resumed (400 µs each), 450 µs/req in all.
		{Step: "churn-perconn1", Target: "grpc", Repeat: 1, RequestsPerConnection: 1, ThroughputRPS: 1000, CPUMicrosPerRequest: 450,
			TLS: tlsState(1000, 10000, 5000)},
		// N = 100: 50,000 req/s, 500 handshakes/s, 11.5 µs/req.
		{Step: "churn-perconn100", Target: "grpc", Repeat: 1, RequestsPerConnection: 100, ThroughputRPS: 50000, CPUMicrosPerRequest: 11.5,
			TLS: tlsState(500, 5000, 5000)},
		{Step: "getuser", Target: "grpc", Repeat: 1, ThroughputRPS: 90000, CPUMicrosPerRequest: 10},
	}
	var b bytes.Buffer
	writeChurn(&b, recs)
	out := b.String()
	for _, want := range []string{
		"## Connection churn",
		"| churn | grpc | 1 | 1000 | 1000 | 50 % | 700 | 100 | 400.0 | 450.0 |",
		"| churn | grpc | 100 | 50000 | 500 | 100 % | 700 | 100 | 1.0 | 11.5 |",
		// (450 − 11.5) / (1 − 1/100) = 442.9 µs per connection.
		"| churn | grpc | 1 vs 100 | 443 |",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("summary lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "getuser") {
		t.Errorf("a step that does not churn is listed:\n%s", out)
	}
	b.Reset()
	writeChurn(&b, recs[2:])
	if b.Len() != 0 {
		t.Errorf("no churning step, yet: %s", b.String())
	}
}
