package results

import (
	"fmt"
	"io"
	"text/tabwriter"

	"github.com/protobench/protobench/internal/record"
	"github.com/protobench/protobench/internal/scenario"
)

// Table writes the compact terminal version of summary.md: one line per step, target and tool,
// then the ratios, knees and published figures beside ours.
func Table(w io.Writer, recs []record.Record, plan *scenario.Plan) error {
	s := Summarize(plan, recs)
	// One tabwriter for all sections, flushed after each, so a section's columns line up among
	// themselves and the headings between them are written straight to w.
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	for _, section := range []func(io.Writer, *tabwriter.Writer, *Summary) error{
		tableGroups, tableRatios, tableKnees, tablePublished,
	} {
		if err := section(w, tw, s); err != nil {
			return err
		}
	}
	return nil
}

// tableGroups writes one line per step, target and tool.
func tableGroups(w io.Writer, tw *tabwriter.Writer, s *Summary) error {
	fmt.Fprintln(w, "Medians; intervals are exact order statistics of the median, with their real coverage:")
	fmt.Fprintln(tw, "STEP\tTARGET\tTOOL\tN\tREQ/S (INTERVAL)\tINTERVAL\tCV\tP99 MS (INTERVAL)\tSERVER CPU %\tFLAGS")
	for _, g := range s.Groups {
		cv := "-"
		if g.Throughput.N >= 2 {
			cv = fmtPercent(g.Throughput.CV)
		}
		n := fmt.Sprint(g.Throughput.N)
		if g.Failed > 0 {
			n += fmt.Sprintf("+%d failed", g.Failed)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", g.Step, g.Target, g.Tool, n,
			fmtWithCI(g.Throughput), IntervalLabel(g.Throughput), cv, fmtWithCI(g.P99), fmtNum(g.ServerCPUPercent), fmtFlags(g))
	}
	return tw.Flush()
}

// tableRatios writes each target's ratios to its step's baseline, if any.
func tableRatios(w io.Writer, tw *tabwriter.Writer, s *Summary) error {
	if len(s.Ratios) == 0 {
		return nil
	}
	fmt.Fprintln(w, "\nRatios to the baseline (paired by repeat; unpaired beside it):")
	for _, r := range s.Ratios {
		fl := ""
		if r.Flagged() {
			fl = "\tflagged runs beneath: " + FlagCounts(r.Flags, r.Runs)
		}
		fmt.Fprintf(tw, "  %s\t%s\t%s/%s\tthroughput %s\tunpaired %s\tp99 %s%s\n", r.Step, r.Tool, r.Target, r.Baseline,
			r.RatioCell(r.ThroughputPaired, r.ThroughputPairedCI), r.RatioCell(r.Throughput, r.ThroughputCI),
			r.RatioCell(r.P99Paired, r.P99PairedCI), fl)
	}
	return tw.Flush()
}

// tableKnees writes the knee of each swept step, if any.
func tableKnees(w io.Writer, tw *tabwriter.Writer, s *Summary) error {
	if len(s.Knees) == 0 {
		return nil
	}
	fmt.Fprintln(w, "\nKnee (highest throughput with p99 under the limit):")
	for _, k := range s.Knees {
		if k.Group == nil {
			fmt.Fprintf(tw, "  %s\t%s\t%s\tp99 < %s ms\tnone\n", k.BaseStep, k.Target, k.Tool, fmtNum(k.ThresholdMs))
			continue
		}
		fmt.Fprintf(tw, "  %s\t%s\t%s\tp99 < %s ms\t%s\t%s req/s\tp99 %s ms\n", k.BaseStep, k.Target, k.Tool,
			fmtNum(k.ThresholdMs), k.Group.Step, fmtNum(k.Group.Throughput.Median), fmtNum(k.Group.P99.Median))
	}
	return tw.Flush()
}

// tablePublished writes the published figures this run measured, beside ours.
func tablePublished(w io.Writer, tw *tabwriter.Writer, s *Summary) error {
	var compared []FigureRow
	for _, r := range s.Published {
		if r.Group != nil {
			compared = append(compared, r)
		}
	}
	if len(compared) == 0 {
		return nil
	}
	fmt.Fprintln(w, "\nPublished vs ours (per core: their cores vs our server cap):")
	for _, r := range compared {
		fmt.Fprintln(tw, publishedLine(r))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	fmt.Fprintln(w, "  (how the article's method differs: see summary.md)")
	return nil
}

// publishedLine is one published figure's table line: a gain figure shows our gain and the step
// it is over instead of the ratio.
func publishedLine(r FigureRow) string {
	f := r.Figure
	line := fmt.Sprintf("  %s\tpublished %s\tours %s\t%s", f.Name, fmtFigure(f.Value, f.Unit), fmtFigure(r.Ours, f.Unit), fmtRatio(r.Ratio))
	if isGain(f) {
		over := "nothing to divide by"
		if r.Versus != nil {
			over = "over " + r.Versus.Step
		}
		line = fmt.Sprintf("  %s\tpublished %s\tours %s\t%s", f.Name, fmtFigure(f.Value, f.Unit), GainText(r.Ours, r.CI), over)
	}
	if scenario.PerCore(f.Metric) {
		line += fmt.Sprintf("\tper core %s vs %s", fmtFigure(r.TheirsPerCore, f.Unit), fmtFigure(r.OursPerCore, f.Unit))
	} else {
		line += "\t"
	}
	if f.Note != "" {
		line += "\tnote: " + f.Note
	}
	return line
}
