package results

import (
	"bytes"
	"fmt"
	"regexp"
	"sort"

	"github.com/protobench/protobench/internal/record"
	"github.com/protobench/protobench/internal/stats"
)

// churnSuffix is the part of a variant's name that scenario.expandChurn adds.
var churnSuffix = regexp.MustCompile(`-perconn(\d+|forever)`)

// churnCell is one target of one churning step at one requests-per-connection value, over its
// repeats.
type churnCell struct {
	base, target string
	perConn      int // 0: reused forever
	cpuPerReq    []float64
	rps          []float64
	hsPerSec     []float64
	hsCPUPerReq  []float64 // the handshakes' sampled server CPU spread over the requests
	resumedShare []float64
	cpuFull      []float64
	cpuResumed   []float64
}

// writeChurn says, for each step that churns connections, what a connection costs each
// protocol: the handshake rate and the handshakes' share of the server's CPU per request (from
// the servers' sampled handshake CPU), and, where the step ran two or more requests-per-
// connection values, the server's whole CPU per connection (TCP and TLS, kernel excluded) from
// how its CPU per request moved between them.
func writeChurn(b *bytes.Buffer, recs []record.Record) {
	cells := map[string]*churnCell{}
	var order []string
	for _, r := range recs {
		if !r.Valid() || (r.RequestsPerConnection == 0 && !churnSuffix.MatchString(r.Step)) {
			continue
		}
		base := churnSuffix.ReplaceAllString(r.Step, "")
		key := fmt.Sprintf("%s\x00%s\x00%d", base, r.Target, r.RequestsPerConnection)
		c := cells[key]
		if c == nil {
			c = &churnCell{base: base, target: r.Target, perConn: r.RequestsPerConnection}
			cells[key] = c
			order = append(order, key)
		}
		c.cpuPerReq = append(c.cpuPerReq, r.CPUMicrosPerRequest)
		c.rps = append(c.rps, r.ThroughputRPS)
		if t := r.TLS; t != nil && t.Version != "" {
			c.hsPerSec = append(c.hsPerSec, t.HandshakesPerSec)
			if t.Handshakes > 0 {
				c.resumedShare = append(c.resumedShare, t.Resumed/t.Handshakes)
				perHandshake := (t.CPUUsFull*(t.Handshakes-t.Resumed) + t.CPUUsResumed*t.Resumed) / t.Handshakes
				if r.ThroughputRPS > 0 && perHandshake > 0 {
					c.hsCPUPerReq = append(c.hsCPUPerReq, t.HandshakesPerSec*perHandshake/r.ThroughputRPS)
				}
			}
			if t.CPUUsFull > 0 {
				c.cpuFull = append(c.cpuFull, t.CPUUsFull)
			}
			if t.CPUUsResumed > 0 {
				c.cpuResumed = append(c.cpuResumed, t.CPUUsResumed)
			}
		}
	}
	if len(order) == 0 {
		return
	}
	sort.SliceStable(order, func(i, j int) bool {
		a, c := cells[order[i]], cells[order[j]]
		if a.base != c.base {
			return a.base < c.base
		}
		if a.target != c.target {
			return a.target < c.target
		}
		return churnRank(a.perConn) < churnRank(c.perConn)
	})
	b.WriteString("## Connection churn\n\nSteps whose connections each carried N requests, then closed (requests_per_connection; " +
		"\"forever\" reuses them). Medians over repeats. \"Handshake CPU µs/req\" is the server's sampled CPU per handshake " +
		"(full and resumed, weighted by how many of each) times the handshake rate, over the throughput: what the TLS handshakes " +
		"cost each request. \"CPU µs/req\" is the server's whole CPU per request.\n\n")
	b.WriteString("| Step | Target | Req/conn | Req/s | Handshakes/s | Resumed | CPU µs/full | CPU µs/resumed | Handshake CPU µs/req | CPU µs/req |\n")
	b.WriteString("|---|---|---|---|---|---|---|---|---|---|\n")
	for _, k := range order {
		c := cells[k]
		resumed := "-"
		if len(c.resumedShare) > 0 {
			resumed = fmt.Sprintf("%.0f %%", stats.Median(c.resumedShare)*100)
		}
		fmt.Fprintf(b, "| %s | %s | %s | %.0f | %s | %s | %s | %s | %s | %.1f |\n",
			c.base, c.target, perConnText(c.perConn), stats.Median(c.rps), medianOrDash(c.hsPerSec, "%.0f"), resumed,
			usOrDash(medianOf(c.cpuFull)), usOrDash(medianOf(c.cpuResumed)), medianOrDash(c.hsCPUPerReq, "%.1f"), stats.Median(c.cpuPerReq))
	}
	b.WriteString("\n")
	writeConnectionCost(b, cells, order)
}

// writeConnectionCost gives, per step and target with two or more requests-per-connection
// values, the server CPU one connection costs: CPU per request is a + cost/N, so two values of
// N give the cost from the difference (forever is 1/N = 0).
func writeConnectionCost(b *bytes.Buffer, cells map[string]*churnCell, order []string) {
	var rows []string
	for i, k := range order {
		lo := cells[k] // the most churning value of its step and target comes first
		if i > 0 {
			prev := cells[order[i-1]]
			if prev.base == lo.base && prev.target == lo.target {
				continue
			}
		}
		var hi *churnCell
		for _, k2 := range order[i+1:] {
			c := cells[k2]
			if c.base != lo.base || c.target != lo.target {
				break
			}
			hi = c // the least churning value
		}
		if hi == nil || lo.perConn == 0 {
			continue
		}
		inv := func(n int) float64 {
			if n == 0 {
				return 0
			}
			return 1 / float64(n)
		}
		cost := (stats.Median(lo.cpuPerReq) - stats.Median(hi.cpuPerReq)) / (inv(lo.perConn) - inv(hi.perConn))
		rows = append(rows, fmt.Sprintf("| %s | %s | %s vs %s | %.0f |", lo.base, lo.target,
			perConnText(lo.perConn), perConnText(hi.perConn), cost))
	}
	if len(rows) == 0 {
		return
	}
	b.WriteString("Server CPU per connection, from how CPU per request moved between the step's values of N " +
		"(CPU per request = a + cost/N): connecting, the TLS handshake and closing, as the server's container paid for them.\n\n")
	b.WriteString("| Step | Target | Req/conn compared | CPU µs/connection |\n|---|---|---|---|\n")
	for _, r := range rows {
		b.WriteString(r + "\n")
	}
	b.WriteString("\n")
}

// churnRank orders requests-per-connection values from the most churning to forever.
func churnRank(n int) int {
	if n == 0 {
		return int(^uint(0) >> 1)
	}
	return n
}

func perConnText(n int) string {
	if n == 0 {
		return "forever"
	}
	return fmt.Sprint(n)
}

func medianOf(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	return stats.Median(xs)
}

func medianOrDash(xs []float64, format string) string {
	if len(xs) == 0 {
		return "-"
	}
	return fmt.Sprintf(format, stats.Median(xs))
}
