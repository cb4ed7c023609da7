package results

import (
	"bytes"
	"fmt"
	"strings"

	"github.com/protobench/protobench/internal/equalload"
	"github.com/protobench/protobench/internal/record"
)

// EqualLoadAnchor is the summary's and the report's anchor of the latency-at-equal-load table.
const EqualLoadAnchor = "latency-at-equal-load"

// EqualLoadIntro says what the equal-load table measures and why the closed-loop latencies do
// not: one paragraph, shared by summary.md and report.html.
func EqualLoadIntro(rows []equalload.Row) string {
	capacity := ""
	for _, r := range rows {
		if r.CapacityRPS > 0 {
			capacity = fmt.Sprintf(" (%s req/s)", fmtNum(r.CapacityRPS))
			break
		}
	}
	from := "an earlier step"
	if s := capacityStep(rows); s != "" {
		from = "step " + s
	}
	return "Every protocol held at the same offered rate, in the open model, at a share of the capacity the slower one reached in " +
		from + " of this run" + capacity + ". Latency counts from each request's intended send time, so queueing shows; " +
		"requests never sent or unanswered at the end count to the end of the run (incomplete). Medians over the n repeats. " +
		"CPU µs/req is the server container's; core µs/req is its cores' busy time (user, system, softirq, irq) per request. " +
		"The closed-loop latencies elsewhere are the requests in flight divided by the throughput (Little's law): they restate the throughput, not latency at a load."
}

func capacityStep(rows []equalload.Row) string {
	for _, r := range rows {
		if r.CapacityStep != "" {
			return r.CapacityStep
		}
	}
	return ""
}

// writeEqualLoad writes the latency-at-equal-load table, when the run has one.
func writeEqualLoad(b *bytes.Buffer, recs []record.Record, s *Summary) {
	rows := equalload.Table(recs)
	if len(rows) == 0 {
		// The answer's latency line links here: the place stays, saying why it is empty.
		if s.Answer().Headline != nil {
			fmt.Fprintf(b, "<a id=\"%s\"></a>\n\n## Latency at equal load\n\nLatency at equal load is %s\n\n", EqualLoadAnchor, NoEqualLoad)
		}
		return
	}
	fmt.Fprintf(b, "<a id=\"%s\"></a>\n\n## Latency at equal load\n\n%s\n\n", EqualLoadAnchor, EqualLoadIntro(rows))
	b.WriteString("| Load | Offered req/s | Target | n | Achieved req/s | p50 ms | p99 ms | p99.9 ms | CPU µs/req | Core µs/req | Incomplete | Flags |\n")
	b.WriteString("|---:|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|---|\n")
	for _, r := range rows {
		for _, c := range r.Cells {
			rate := na
			if r.Rate > 0 {
				rate = fmtNum(r.Rate)
			}
			fmt.Fprintf(b, "| %s %% | %s | %s | %d | %s | %s | %s | %s | %s | %s | %d | %s |\n",
				fmtNum(r.LoadPercent), rate, c.Target, c.N, orNA(c.AchievedRPS, c.N), orNA(c.P50, c.N), orNA(c.P99, c.N), orNA(c.P999, c.N),
				orNA(c.CPUMicros, c.N), orNA(c.CoreMicros, c.N), c.Incomplete, orDash(strings.Join(c.Flags, ", ")))
		}
	}
	b.WriteString("\n")
	writeWitnesses(b, equalload.Witnesses(recs))
}

// WitnessIntro says what the cross-check of the equal-load table is and its margin.
func WitnessIntro() string {
	return fmt.Sprintf("The same loads offered by a cross-check tool with an open model of its own (k6: constant-arrival-rate), at the rates our generator was given. "+
		"Two tools agree on a percentile within %.0f %% of the larger value or %.1f ms; a side flagged rate-not-met, client-bound, errors, incomplete or failed gives no verdict. "+
		"Our latency counts from the intended send time; k6's from its actual send, and it drops an arrival that finds no free VU (rate-not-met) instead of queueing it.",
		equalload.AgreeFraction*100, equalload.AgreeFloorMs)
}

func writeWitnesses(b *bytes.Buffer, ws []equalload.Witness) {
	if len(ws) == 0 {
		return
	}
	b.WriteString("### Cross-check\n\n" + WitnessIntro() + "\n\n")
	b.WriteString("| Load | Offered req/s | Target | Witness | ours p50 ms | its p50 ms | ours p99 ms | its p99 ms | n (ours, its) | Verdict |\n")
	b.WriteString("|---:|---:|---|---|---:|---:|---:|---:|---|---|\n")
	for _, w := range ws {
		rate := na
		if w.Rate > 0 {
			rate = fmtNum(w.Rate)
		}
		verdict := w.Verdict
		if w.Why != "" {
			verdict += ": " + w.Why
		}
		fmt.Fprintf(b, "| %s %% | %s | %s | %s | %s | %s | %s | %s | %d, %d | %s |\n",
			fmtNum(w.LoadPercent), rate, w.Target, w.Tool, orNA(w.Ours.P50, w.Ours.N), orNA(w.Theirs.P50, w.Theirs.N),
			orNA(w.Ours.P99, w.Ours.N), orNA(w.Theirs.P99, w.Theirs.N), w.Ours.N, w.Theirs.N, verdict)
	}
	b.WriteString("\n")
}

func orNA(v float64, n int) string {
	if n == 0 || v <= 0 {
		return na
	}
	return fmtNum(v)
}
