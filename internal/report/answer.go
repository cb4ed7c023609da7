package report

import (
	"strings"

	"github.com/protobench/protobench/internal/results"
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
			RPSPaired: r.RatioCell(r.ThroughputPaired, r.ThroughputPairedCI), RPS: r.RatioCell(r.Throughput, r.ThroughputCI),
			P99Paired: r.RatioCell(r.P99Paired, r.P99PairedCI), P99: r.RatioCell(r.P99, r.P99CI),
			Flags: results.FlagCounts(r.Flags, r.Runs)})
	}
	a := f.Summary.Answer()
	h := a.Headline
	if h == nil {
		return nil, rows
	}
	block := &answerBlock{Pair: h.Target + " / " + h.Baseline, Step: h.Step,
		Paired: h.RatioCell(h.ThroughputPaired, h.ThroughputPairedCI), Unpaired: h.RatioCell(h.Throughput, h.ThroughputCI)}
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
		parts = append(parts, strings.ReplaceAll(r.Text(), "**", ""))
	}
	if len(parts) > 0 {
		block.Latency = strings.Join(parts, "; ") + " (open model, from intended send time; paired: the two targets' runs of one repeat)."
	}
	return block, rows
}
