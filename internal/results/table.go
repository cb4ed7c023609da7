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
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
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
	if err := tw.Flush(); err != nil {
		return err
	}
	if len(s.Ratios) > 0 {
		fmt.Fprintln(w, "\nRatios to the baseline (paired by repeat; unpaired beside it):")
		for _, r := range s.Ratios {
			fl := ""
			if r.Flagged() {
				fl = "\tflagged runs beneath: " + FlagCounts(r.Flags, r.Runs)
			}
			fmt.Fprintf(tw, "  %s\t%s\t%s/%s\tthroughput %s\tunpaired %s\tp99 %s%s\n", r.Step, r.Tool, r.Target, r.Baseline,
				fmtRatioLabelled(r.ThroughputPaired, r.ThroughputPairedCI), fmtRatioLabelled(r.Throughput, r.ThroughputCI),
				fmtRatioLabelled(r.P99Paired, r.P99PairedCI), fl)
		}
		if err := tw.Flush(); err != nil {
			return err
		}
	}
	if len(s.Knees) > 0 {
		fmt.Fprintln(w, "\nKnee (highest throughput with p99 under the limit):")
		for _, k := range s.Knees {
			if k.Group == nil {
				fmt.Fprintf(tw, "  %s\t%s\t%s\tp99 < %s ms\tnone\n", k.BaseStep, k.Target, k.Tool, fmtNum(k.ThresholdMs))
				continue
			}
			fmt.Fprintf(tw, "  %s\t%s\t%s\tp99 < %s ms\t%s\t%s req/s\tp99 %s ms\n", k.BaseStep, k.Target, k.Tool,
				fmtNum(k.ThresholdMs), k.Group.Step, fmtNum(k.Group.Throughput.Median), fmtNum(k.Group.P99.Median))
		}
		if err := tw.Flush(); err != nil {
			return err
		}
	}
	var compared []FigureRow
	for _, r := range s.Published {
		if r.Group != nil {
			compared = append(compared, r)
		}
	}
	if len(compared) > 0 {
		fmt.Fprintln(w, "\nPublished vs ours (per core: their cores vs our server cap):")
		for _, r := range compared {
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
			fmt.Fprintln(tw, line)
		}
		if err := tw.Flush(); err != nil {
			return err
		}
		fmt.Fprintln(w, "  (how the article's method differs: see summary.md)")
	}
	return nil
}
