package results

import (
	"fmt"

	"github.com/protobench/protobench/internal/record"
	"github.com/protobench/protobench/internal/scenario"
)

// AnswerLine is the answer's headline for the terminal, as soon as the headline step's repeats
// are done: the throughput ratio with its interval (its method, coverage and n), paired and
// unpaired, as summary.md's answer gives it; "" when the records hold no ratio yet.
func AnswerLine(plan *scenario.Plan, recs []record.Record) string {
	s := Summarize(plan, recs)
	a := s.Answer()
	h := a.Headline
	if h == nil {
		return ""
	}
	line := fmt.Sprintf("Answer: throughput %s / %s in %s: %s paired; unpaired %s",
		h.Target, h.Baseline, h.Step, fmtRatioLabelled(h.ThroughputPaired, h.ThroughputPairedCI), fmtRatioLabelled(h.Throughput, h.ThroughputCI))
	if h.Flagged() {
		line += "; rests on flagged runs: " + FlagCounts(h.Flags, h.Runs)
	}
	return line
}
