package report

import (
	"fmt"
	"strings"

	"github.com/protobench/protobench/internal/results"
	"github.com/protobench/protobench/internal/svgchart"
)

// answerBlock is the opening of the page: the headline ratio, latency at equal load, and why.
type answerBlock struct {
	Pair, Step, Paired, Unpaired, Flags, Latency string
	Why                                          []results.Reason
}

type ratioRow struct {
	Step, StepID, Tool, Pair, RPSPaired, RPS, P99Paired, P99, Flags string
}

// answer builds the page's opening and the ratios section, from the same Summary
// that summary.md reads, so both say the same.
func answer(f *Folder) (*answerBlock, []ratioRow) {
	var rows []ratioRow
	for _, r := range f.Summary.Ratios {
		rows = append(rows, ratioRow{Step: r.Step, StepID: StepID(r.Step), Tool: r.Tool, Pair: r.Target + " / " + r.Baseline,
			RPSPaired: results.RatioText(r.ThroughputPaired, r.ThroughputPairedCI), RPS: results.RatioText(r.Throughput, r.ThroughputCI),
			P99Paired: results.RatioText(r.P99Paired, r.P99PairedCI), P99: results.RatioText(r.P99, r.P99CI),
			Flags: results.FlagCounts(r.Flags, r.Runs)})
	}
	a := f.Summary.Answer()
	h := a.Headline
	if h == nil {
		return nil, rows
	}
	block := &answerBlock{Pair: h.Target + " / " + h.Baseline, Step: h.Step,
		Paired: results.RatioText(h.ThroughputPaired, h.ThroughputPairedCI), Unpaired: results.RatioText(h.Throughput, h.ThroughputCI)}
	if h.Flagged() {
		block.Flags = results.FlagCounts(h.Flags, h.Runs)
	}
	for _, w := range a.Why {
		block.Why = append(block.Why, results.Reason{Text: w.Text, Anchor: w.Anchor})
	}
	if len(a.EqualLoad) == 0 {
		block.Latency = results.NoEqualLoad
	}
	var parts []string
	for _, r := range a.EqualLoad {
		t, b := r.Target, r.Baseline
		parts = append(parts, fmt.Sprintf("at %s/s p99 %s %s ms, %s %s ms", svgchart.FormatNumber(r.Rate), t.Target, svgchart.FormatNumber(t.P99.Median), b.Target, svgchart.FormatNumber(b.P99.Median)))
	}
	if len(parts) > 0 {
		block.Latency = strings.Join(parts, "; ") + " (open model, from intended send time)."
	}
	return block, rows
}
