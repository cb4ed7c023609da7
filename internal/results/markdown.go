package results

import (
	"bytes"
	"fmt"
	"io"
	"maps"
	"math"
	"slices"
	"strings"

	"github.com/protobench/protobench/internal/record"
	"github.com/protobench/protobench/internal/scenario"
)

// WriteSummary writes summary.md: the answer first, then per step and target the median over
// repeats with exact intervals (coverage and n printed) and flags, ratios between targets, the
// knee of swept steps, agreement between tools, and the article's figures beside ours, per run
// and per core. plan may be nil (records alone).
func WriteSummary(w io.Writer, plan *scenario.Plan, recs []record.Record) error {
	return writeSummary(w, plan, recs, Links{})
}

// writeSummary is WriteSummary with the step rows' links (see Links).
func writeSummary(w io.Writer, plan *scenario.Plan, recs []record.Record, links Links) error {
	s := Summarize(plan, recs)
	s.Links = links
	var b bytes.Buffer
	writeHeader(&b, plan, recs)
	writeAnswer(&b, s)
	writeResults(&b, s)
	// The legend sits right under the table whose Flags column it explains.
	writeFlagNotes(&b, s)
	writeRatios(&b, s)
	writeWork(&b, s)
	writeEqualLoad(&b, recs, s)
	writeTopologies(&b, s)
	writeSweeps(&b, s)
	writeCells(&b, s)
	writeKnees(&b, s)
	writeAgreement(&b, s)
	writePublished(&b, s)
	writeTLS(&b, recs)
	writeChurn(&b, recs)
	_, err := w.Write(b.Bytes())
	return err
}

func writeHeader(b *bytes.Buffer, plan *scenario.Plan, recs []record.Record) {
	name := ""
	if len(recs) > 0 {
		name = recs[0].Scenario
	}
	if plan == nil || plan.Scenario == nil {
		fmt.Fprintf(b, "# %s\n\n", orDash(name))
		writeToolNotes(b, recs)
		return
	}
	sc := plan.Scenario
	fmt.Fprintf(b, "# %s\n\n%s\n\n", sc.Name, sc.Description)
	if sc.Source != "" {
		fmt.Fprintf(b, "- Source: seed `%s`\n", sc.Source)
	}
	fmt.Fprintf(b, "- Scenario sha256: `%s`\n", sc.Hash())
	l := plan.Layout
	fmt.Fprintf(b, "- Host: %d cores; server cpuset %s, client cpuset %s, observability cpuset %s%s\n",
		l.Cores, l.ServerCPUSet, l.ClientCPUSet, l.ObservabilityCPUSet, StackPlaces(recs))
	if l.FromHost() {
		fmt.Fprintf(b, "- CPU layout: %s\n", l.Reason)
	}
	if plan.Options.Quick {
		fmt.Fprintf(b, "- Quick mode: runs cut to %s and one repeat; not for quoting\n", scenario.QuickBudget)
	}
	for _, n := range plan.Notes {
		fmt.Fprintf(b, "- Note: %s\n", n)
	}
	if line := BusyHostLine(recs); line != "" {
		fmt.Fprintf(b, "- **Busy host**: %s\n", line)
	}
	b.WriteString("\n")
	writeToolNotes(b, recs)
}

// writeToolNotes lists, once each, the caveats tools attached to their records (h2load cannot
// see grpc-status), so that a reader weighs those rows accordingly.
func writeToolNotes(b *bytes.Buffer, recs []record.Record) {
	seen := map[string]bool{}
	for _, r := range recs {
		for _, n := range r.Notes {
			if key := r.Tool + "\x00" + n; !seen[key] {
				seen[key] = true
				fmt.Fprintf(b, "- Note on %s: %s\n", r.Tool, n)
			}
		}
	}
	if len(seen) > 0 {
		b.WriteString("\n")
	}
}

func writeResults(b *bytes.Buffer, s *Summary) {
	b.WriteString("## Results\n\n")
	if len(s.Groups) == 0 {
		b.WriteString("No measurements.\n\n")
		return
	}
	b.WriteString("Medians over repeats. Each interval of a median is a pair of order statistics whose coverage is exact " +
		"(binomial, whatever the distribution): the Interval column says which pair, its real coverage and n. " +
		"With fewer than 6 repeats no such interval reaches 95 %: [min,max] covers 50 % at n=2, 75 % at 3, 93.8 % at 5. " +
		"CV is the throughput's coefficient of variation. Latency in a closed-loop step is round-trip time at a fixed number " +
		"in flight (mean ≈ in flight / throughput), not latency at equal load.\n\n")
	b.WriteString("| Step | Target | Tool | Workload | n | Throughput req/s (interval) | Interval | CV | p50 ms | p99 ms (interval) | Mean ms | Server CPU % of cap | CPU µs/req | Server mem MiB | Flags | Charts |\n")
	b.WriteString("|---|---|---|---|---:|---:|---|---:|---:|---:|---:|---:|---:|---:|---|---|\n")
	for _, g := range s.Groups {
		n := fmt.Sprint(g.Throughput.N)
		if g.Failed > 0 {
			n = fmt.Sprintf("%d (+%d failed)", g.Throughput.N, g.Failed)
		}
		cv := na
		if g.Throughput.N >= 2 {
			cv = fmtPercent(g.Throughput.CV)
		}
		cpu := na
		if !math.IsNaN(g.ServerCPUPercent) {
			cpu = fmtNum(g.ServerCPUPercent)
		}
		fmt.Fprintf(b, "| %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |\n",
			g.Step, g.Target, g.Tool, workloadName(g), n, fmtWithCI(g.Throughput), IntervalLabel(g.Throughput), cv,
			fmtNum(g.P50Ms), fmtWithCI(g.P99), fmtNum(g.MeanMs), cpu,
			fmtNum(g.CPUMicrosPerRequest), fmtMiB(g.ServerMemMaxBytes), fmtFlags(g), s.Links.stepLinks(g))
	}
	b.WriteString("\n")
}

func writeRatios(b *bytes.Buffer, s *Summary) {
	if len(s.Ratios) == 0 {
		return
	}
	b.WriteString("<a id=\"ratios\"></a>\n## Ratios between targets\n\n")
	b.WriteString("One target over the step's baseline, same tool. Paired: the geometric mean of the ratios of the two targets' runs " +
		"in the same repeat (they ran one after the other, in shuffled order), with a t interval on the log ratios; drift between " +
		"repeats cancels in each pair. Unpaired: the ratio of the geometric means of all repeats, with Welch's t interval on the logs. " +
		"Both intervals aim at 95 % (exact for log-normal figures); each says its n. Throughput above 1× and p99 below 1× favour the first target. " +
		"Flags are those of the runs beneath the ratio, both targets together.\n\n")
	b.WriteString("| Step | Tool | Ratio | Throughput, paired | Throughput, unpaired | p99, paired | p99, unpaired | Flags beneath |\n|---|---|---|---:|---:|---:|---:|---|\n")
	flagged := 0
	for _, r := range s.Ratios {
		fl := FlagCounts(r.Flags, r.Runs)
		if r.Flagged() {
			flagged++
			fl = "**" + fl + "**"
		}
		fmt.Fprintf(b, "| %s | %s | %s / %s | %s | %s | %s | %s | %s |\n", r.Step, r.Tool, r.Target, r.Baseline,
			r.RatioCell(r.ThroughputPaired, r.ThroughputPairedCI), r.RatioCell(r.Throughput, r.ThroughputCI),
			r.RatioCell(r.P99Paired, r.P99PairedCI), r.RatioCell(r.P99, r.P99CI), fl)
	}
	b.WriteString("\n")
	if flagged > 0 {
		fmt.Fprintf(b, "%d of %d ratios rest on flagged runs (in bold): read them with the flags' meaning above.\n\n", flagged, len(s.Ratios))
	}
}

func writeKnees(b *bytes.Buffer, s *Summary) {
	if len(s.Knees) == 0 {
		return
	}
	b.WriteString("## Knee\n\nThe highest median throughput whose median p99 stays under the step's threshold.\n\n")
	b.WriteString("| Step | Target | Tool | p99 limit ms | Knee at | Throughput req/s | p99 ms |\n|---|---|---|---:|---|---:|---:|\n")
	for _, k := range s.Knees {
		if k.Group == nil {
			fmt.Fprintf(b, "| %s | %s | %s | %s | none under the limit | %s | %s |\n", k.BaseStep, k.Target, k.Tool, fmtNum(k.ThresholdMs), na, na)
			continue
		}
		fmt.Fprintf(b, "| %s | %s | %s | %s | %s | %s | %s |\n", k.BaseStep, k.Target, k.Tool, fmtNum(k.ThresholdMs),
			k.Group.Step, fmtWithCI(k.Group.Throughput), fmtWithCI(k.Group.P99))
	}
	b.WriteString("\n")
}

func writeAgreement(b *bytes.Buffer, s *Summary) {
	if len(s.Agreement) == 0 {
		return
	}
	b.WriteString("## Tool agreement\n\nThe same workload on the same target measured by different tools, against the reference tool " +
		"(our generator where it ran). Tools differ in client cost, so a gap is a property of the tool as much as of the server.\n\n")
	b.WriteString("| Target | Workload | Tool | Throughput req/s | vs reference | p99 ms | vs reference |\n|---|---|---|---:|---:|---:|---:|\n")
	for _, a := range s.Agreement {
		fmt.Fprintf(b, "| %s | %s | %s (ref %s) | %s | %s | %s | %s |\n", a.Target, a.Workload, a.Tool.Tool, a.Reference.Tool,
			fmtNum(a.Tool.Throughput.Median), fmtRatio(a.Throughput), fmtNum(a.Tool.P99.Median), fmtRatio(a.P99))
	}
	b.WriteString("\n")
}

func writePublished(b *bytes.Buffer, s *Summary) {
	if s.Plan == nil || s.Plan.Scenario == nil || s.Plan.Scenario.Published == nil {
		return
	}
	pub := s.Plan.Scenario.Published
	b.WriteString("## Published vs ours\n\n")
	title := pub.Title
	if title == "" {
		title = "The article"
	}
	fmt.Fprintf(b, "%s measured on: %s.  \nIts method: %s.  \n", mdEscape(title), mdEscape(pub.Hardware.Description), mdEscape(pub.Method))
	fmt.Fprintf(b, "Ours: median over repeats on the capped server. Per core divides throughput by the article's cores and by our server's CPU cap.")
	for _, f := range pub.Figures {
		if isGain(f) {
			b.WriteString(" A gain in throughput compares two variants of a step (the first over the second): the geometric mean of " +
				"their per-repeat throughput ratios, less 1, with a t interval on the logs of those ratios.")
			break
		}
	}
	b.WriteString("\n\n")
	b.WriteString("| Figure | Measures | Published | Ours | Ours / published | Published per core | Ours per core | Our step | Note |\n")
	b.WriteString("|---|---|---:|---:|---:|---:|---:|---|---|\n")
	for _, r := range s.Published {
		f := r.Figure
		ours, ratio, step := na, na, na
		theirsPC, oursPC := "—", "—"
		switch {
		case f.Metric == "":
			ours, ratio, step = "not measured", "—", "—"
		case r.Group == nil:
			ours = "not run"
		case isGain(f):
			ours, ratio, step = "not run (nothing to divide by)", "—", r.Group.Step+" ("+r.Group.Tool+")"
			if r.Versus != nil {
				ours, step = GainText(r.Ours, r.CI), r.Group.Step+" over "+r.Versus.Step+" ("+r.Group.Tool+")"
			}
		default:
			ours, ratio, step = fmtFigure(r.Ours, f.Unit), fmtRatio(r.Ratio), r.Group.Step+" ("+r.Group.Tool+")"
			if scenario.PerCore(f.Metric) {
				theirsPC = perCore(r.TheirsPerCore, r.TheirCores, f.Unit)
				oursPC = perCore(r.OursPerCore, 0, f.Unit)
				if r.Group.ServerCPUs > 0 {
					oursPC = fmt.Sprintf("%s (%s cpu)", fmtFigure(r.OursPerCore, f.Unit), fmtNum(r.Group.ServerCPUs))
				}
			}
		}
		fmt.Fprintf(b, "| %s | %s | %s | %s | %s | %s | %s | %s | %s |\n", mdEscape(f.Name), mdEscape(f.Measures),
			fmtFigure(f.Value, f.Unit), ours, ratio, theirsPC, oursPC, step, mdEscape(f.Note))
	}
	b.WriteString("\n")
	if len(pub.Differences) > 0 {
		b.WriteString("How the article's method differs from ours:\n\n")
		for _, d := range pub.Differences {
			fmt.Fprintf(b, "- %s\n", d)
		}
		b.WriteString("\n")
	}
}

func perCore(v float64, cores int, unit string) string {
	if math.IsNaN(v) {
		return na + " (cores not published)"
	}
	if cores > 0 {
		return fmt.Sprintf("%s (%d cores)", fmtFigure(v, unit), cores)
	}
	return fmtFigure(v, unit)
}

var flagMeanings = []struct{ flag, meaning string }{
	{record.FlagFailed, "the run produced no measurement (see the record's error)"},
	{record.FlagErrors, fmt.Sprintf("more than %.0f %% of requests failed", ErrorFractionMax*100)},
	{record.FlagCountMismatch, "the tool's successful requests and the server's own OK count (server_ok, read from its /metrics around the tool) differ by more than the requests in flight: the tool counted errors as successes, or could not decode replies (the record's server_count says by how much)"},
	{record.FlagRateNotMet, fmt.Sprintf("achieved throughput below %.0f %% of the target rate", RateMetMin*100)},
	{record.FlagClientBound, "the load generator's container was near its CPU cap, so the server may have had more to give"},
	{record.FlagClientLatency, fmt.Sprintf("open model: the client's own scheduling lag (from a request's intended send time to its actual send: the generator late, or every connection busy) reached %.0f %% of the reported p99 at its own p99, so that much of the tail may be the client's (scheduler_lag_ms beside latency_ms)", record.ClientLatencyFraction*100)},
	{record.FlagThrottled, "the server's cgroup was CFS-throttled during the run"},
	{record.FlagUnsaturated, fmt.Sprintf("closed loop with neither the server nor the load tool at %d %% of its CPU cap, and the server's cores (where measured) busy less than that (user, system, softirq and irq, less the observability stack's CPU): the figure is round-trip latency times the requests in flight, not either side's capacity", SaturatedPercent)},
	{record.FlagBusyHost, fmt.Sprintf("processes other than the run's own (its server, tool and observability containers) used %d %% or more of the server's or the tool's cores during the window: the machine was not quiet", BusyHostPercent)},
	{record.FlagIncomplete, fmt.Sprintf("open model: more than %.1f %% of the requests scheduled in the window were never sent or still unanswered at the end; they count in the latency up to the end of the run", record.IncompleteFlagFraction*100)},
	{record.FlagNoisy, fmt.Sprintf("throughput CV across repeats above %.0f %%", NoisyCVMax*100)},
	{record.FlagSharedCores, "server and load tool ran on one machine without disjoint cpusets (a single-node swarm: swarm has no cpuset), so they competed for the same cores within their CPU quotas"},
	{record.FlagLateStart, "a load generator sharing the step with others on other client nodes was ready only after their shared start, and started later than they did (client_parts: start_late_s)"},
	{record.FlagSMTShared, legendSMTShared},
	{record.FlagMixedCores, legendMixedCores},
	{record.FlagClockDrop, legendClockDrop},
	{record.FlagPartsApart, fmt.Sprintf("the load generators sharing the step did not measure one window (their starts or ends more than %.0f %% of the window apart): the throughput is their total over the union of their windows, below what they offered together", record.PartsApartFraction*100)},
	{record.FlagEncodingMismatch, "the server counted replies in another encoding than the step's compression (reply_encoding beside compression): the run did other work than its step says"},
}

func writeFlagNotes(b *bytes.Buffer, s *Summary) {
	seen := map[string]bool{}
	for _, g := range s.Groups {
		for _, f := range g.Flags {
			seen[f.Flag] = true
		}
	}
	var lines []string
	for _, fm := range flagMeanings {
		if seen[fm.flag] {
			lines = append(lines, fmt.Sprintf("- `%s`: %s", fm.flag, fm.meaning))
		}
	}
	if len(lines) == 0 {
		b.WriteString("No validity flags were raised.\n\n")
		return
	}
	b.WriteString("Flags in this table:\n\n" + strings.Join(lines, "\n") + "\n\n")
}

func orDash(s string) string {
	if s == "" {
		return "—"
	}
	return s
}

// FlagLegend lists every validity flag with what it means, in the order flags print, for
// reports that show the legend beside their charts.
func FlagLegend() [][2]string {
	out := make([][2]string, len(flagMeanings))
	for i, fm := range flagMeanings {
		out[i] = [2]string{fm.flag, fm.meaning}
	}
	return out
}

// StackPlaces says where the runner put the observability stack during the runs, by tool, as
// the records say (runs of older versions say nothing, and neither does this). A tool whose runs
// sat in more than one place says how many sat in each.
func StackPlaces(recs []record.Record) string {
	tools := map[string]map[string]int{} // cpuset -> tool -> runs
	total := map[string]int{}            // tool -> runs that say where the stack was
	for _, r := range recs {
		if r.ObservabilityCPUSet == "" {
			continue
		}
		if tools[r.ObservabilityCPUSet] == nil {
			tools[r.ObservabilityCPUSet] = map[string]int{}
		}
		tools[r.ObservabilityCPUSet][r.Tool]++
		total[r.Tool]++
	}
	if len(tools) == 0 {
		return ""
	}
	var parts []string
	for _, cpuset := range slices.Sorted(maps.Keys(tools)) {
		var names []string
		for _, name := range slices.Sorted(maps.Keys(tools[cpuset])) {
			if n := tools[cpuset][name]; n < total[name] {
				name = fmt.Sprintf("%s (%d of %d)", name, n, total[name])
			}
			names = append(names, name)
		}
		parts = append(parts, fmt.Sprintf("cpuset %s during %s", cpuset, strings.Join(names, ", ")))
	}
	return "; the stack sat on " + strings.Join(parts, ", on ") + " runs"
}
