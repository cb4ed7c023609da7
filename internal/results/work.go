package results

import (
	"bytes"
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/protobench/protobench/internal/record"
	"github.com/protobench/protobench/internal/stats"
)

// AnchorWork is the section that sets each ratio's two sides' work side by side.
const AnchorWork = "work"

// This file puts, beside every ratio, what each side did per request: the server's CPU, the
// bytes at its network interface, what was on the wire (protocol or ALPN, encoding, compression,
// TLS, requests per connection) and whether the server's own count agreed with the tool's.

// Work is one side of a ratio as the records say it did its work: medians over its valid runs,
// and each fact's distinct values.
type Work struct {
	CPUMicrosPerRequest                  float64
	RxBytesPerReq, TxBytesPerReq         float64 // NaN where no run has them
	Protocol, Encoding, Compression, TLS string
	RequestsPerConnection                float64
	ServerCount                          string
}

// WorkOf summarizes a group's runs.
func WorkOf(g *Group) Work {
	w := Work{CPUMicrosPerRequest: g.CPUMicrosPerRequest}
	var rx, tx, rpc []float64
	facts := make([][]string, 4)
	checked, mismatched, notChecked := 0, 0, ""
	for _, r := range g.valid {
		if r.Wire != nil {
			if r.Wire.RxBytesPerRequest > 0 {
				rx, tx = append(rx, r.Wire.RxBytesPerRequest), append(tx, r.Wire.TxBytesPerRequest)
			}
			if r.Wire.RequestsPerConnection > 0 {
				rpc = append(rpc, r.Wire.RequestsPerConnection)
			}
			for i, v := range []string{r.Wire.Protocol, r.Wire.Encoding, r.Wire.Compression, r.Wire.TLSVersion} {
				if v != "" && !slices.Contains(facts[i], v) {
					facts[i] = append(facts[i], v)
				}
			}
		}
		switch {
		case r.HasFlag(record.FlagCountMismatch):
			mismatched++
		case strings.HasPrefix(r.ServerCount, "not checked"):
			notChecked = r.ServerCount
		case r.ServerCount != "":
			checked++
		}
	}
	w.RxBytesPerReq, w.TxBytesPerReq, w.RequestsPerConnection = medianOrNaN(rx), medianOrNaN(tx), medianOrNaN(rpc)
	join := func(xs []string) string { return orDash(strings.Join(xs, ", ")) }
	w.Protocol, w.Encoding, w.Compression, w.TLS = join(facts[0]), join(facts[1]), join(facts[2]), join(facts[3])
	if w.TLS == "—" && w.Protocol != "—" {
		w.TLS = "cleartext"
	}
	switch {
	case mismatched > 0:
		w.ServerCount = fmt.Sprintf("**count-mismatch in %d of %d**", mismatched, len(g.valid))
	case checked > 0:
		w.ServerCount = fmt.Sprintf("agrees (%d of %d runs)", checked, len(g.valid))
	case notChecked != "":
		w.ServerCount = notChecked
	default:
		w.ServerCount = "—"
	}
	return w
}

func medianOrNaN(xs []float64) float64 {
	if len(xs) == 0 {
		return math.NaN()
	}
	return stats.Median(xs)
}

// fmtBytes is a per-request byte figure, or "—".
func fmtBytes(v float64) string {
	if math.IsNaN(v) {
		return "—"
	}
	return fmtNum(v)
}

// workLine is a side's work in one sentence, for the answer's why.
func workLine(g *Group) string {
	w := WorkOf(g)
	return fmt.Sprintf("%s %s µs CPU, %s B in and %s B out per request, %s, %s, compression %s, %s, %s requests per connection",
		g.Target, fmtNum(w.CPUMicrosPerRequest), fmtBytes(w.RxBytesPerReq), fmtBytes(w.TxBytesPerReq), w.Protocol, w.Encoding,
		w.Compression, w.TLS, fmtBytes(w.RequestsPerConnection))
}

func writeWork(b *bytes.Buffer, s *Summary) {
	if len(s.Ratios) == 0 {
		return
	}
	fmt.Fprintf(b, "<a id=\"%s\"></a>\n## The work beneath each ratio\n\n", AnchorWork)
	b.WriteString("Each ratio's two sides, per request: the server's CPU, the bytes its container received and sent at its network " +
		"interface (cAdvisor; headers, framing and TLS included), and what was on the wire. Requests per connection are the " +
		"requests over the connections opened (the server's TLS handshakes where it shook hands). The server count sets the " +
		"server's own OK answers (its /metrics, read around the tool) against the tool's successes. A ratio whose sides did " +
		"unequal work (method, payload, compression, TLS, requests per connection, in flight, model or rate) has no figure.\n\n")
	b.WriteString("| Step | Tool | Target | CPU µs/req | B in/req | B out/req | Protocol | Encoding | Compression | TLS | Req/conn | Server count | Same work |\n" +
		"|---|---|---|---:|---:|---:|---|---|---|---|---:|---|---|\n")
	for _, r := range s.Ratios {
		same := "yes"
		if r.Unequal != "" {
			same = "**" + r.Unequal + "**"
		}
		for i, g := range []*Group{r.Group, r.Base} {
			w := WorkOf(g)
			col := same
			if i == 1 {
				col = "″"
			}
			fmt.Fprintf(b, "| %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |\n", r.Step, r.Tool, g.Target,
				fmtNum(w.CPUMicrosPerRequest), fmtBytes(w.RxBytesPerReq), fmtBytes(w.TxBytesPerReq), w.Protocol, w.Encoding,
				w.Compression, w.TLS, fmtBytes(w.RequestsPerConnection), mdEscape(w.ServerCount), col)
		}
	}
	b.WriteString("\n")
}
