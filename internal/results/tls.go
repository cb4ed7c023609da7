package results

import (
	"bytes"
	"fmt"

	"github.com/protobench/protobench/internal/record"
)

// writeTLS lists what each TLS run negotiated, from its server's handshake counters, and what
// TLS cost it: handshakes per second, server CPU per handshake, and server CPU per request
// beside the same step's cleartext run when the step has one.
func writeTLS(b *bytes.Buffer, recs []record.Record) {
	var rows []record.Record
	clear := map[string]float64{} // step base (without -tls/-clear) + target -> cleartext CPU µs/req
	for _, r := range recs {
		if r.TLS != nil {
			rows = append(rows, r)
		} else if base, ok := trimSuffix(r.Step, "-clear"); ok && r.CPUMicrosPerRequest > 0 {
			clear[base+"\x00"+r.Target] = r.CPUMicrosPerRequest
		}
	}
	if len(rows) == 0 {
		return
	}
	b.WriteString("## TLS\n\nWhat each TLS run negotiated, as its server counted the handshakes (warm-up included), " +
		"the handshake rate over the measured window, and server CPU per handshake (sampled: one handshake in 8 timed on a locked thread). " +
		"\"CPU/req vs clear\" is the server's CPU per request over TLS beside the same step's cleartext run.\n\n")
	b.WriteString("| Step | Target | Rep | Version | Cipher | Key exchange | ALPN | Handshakes (resumed) | Handshakes/s | CPU µs/full | CPU µs/resumed | CPU µs/req (vs clear) |\n")
	b.WriteString("|---|---|---|---|---|---|---|---|---|---|---|---|\n")
	for _, r := range rows {
		t := r.TLS
		if t.Version == "" {
			fmt.Fprintf(b, "| %s | %s | %d | %s |  |  |  |  |  |  |  |  |\n", r.Step, r.Target, r.Repeat, orDash(t.Source))
			continue
		}
		vs := ""
		if base, ok := trimSuffix(r.Step, "-tls"); ok {
			if c := clear[base+"\x00"+r.Target]; c > 0 {
				vs = fmt.Sprintf(" (%.1f, +%.0f %%)", c, (r.CPUMicrosPerRequest/c-1)*100)
			}
		}
		fmt.Fprintf(b, "| %s | %s | %d | %s | %s | %s | %s | %.0f (%.0f) | %.1f | %s | %s | %.1f%s |\n",
			r.Step, r.Target, r.Repeat, t.Version, t.Cipher, t.Curve, orDash(t.ALPN), t.Handshakes, t.Resumed,
			t.HandshakesPerSec, usOrDash(t.CPUUsFull), usOrDash(t.CPUUsResumed), r.CPUMicrosPerRequest, vs)
	}
	b.WriteString("\n")
}

func usOrDash(v float64) string {
	if v <= 0 {
		return "-"
	}
	return fmt.Sprintf("%.0f", v)
}

func trimSuffix(s, suffix string) (string, bool) {
	if len(s) >= len(suffix) && s[len(s)-len(suffix):] == suffix {
		return s[:len(s)-len(suffix)], true
	}
	return s, false
}
