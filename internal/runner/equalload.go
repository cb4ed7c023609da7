package runner

import (
	"fmt"

	"github.com/protobench/protobench/internal/equalload"
	"github.com/protobench/protobench/internal/record"
	"github.com/protobench/protobench/internal/scenario"
)

// resolveRate gives a latency-at-equal-load run (scenario rate_from) its rate: LoadPercent % of
// the capacity the slowest of the step's targets reached in its capacity step, measured earlier
// in this run by the same tool. Every target of the step gets the same rate because each run
// looks at the same capacity records, which all precede the step. A tool that did not run the
// capacity step (a cross-check tool such as k6 witnessing our generator's equal-load runs) takes
// the capacity our generator measured there (else any tool's), so that it offers the same rates.
func resolveRate(recs []record.Record, plan *scenario.Plan, r scenario.Run) (scenario.Run, float64, error) {
	if r.CapacityStep == "" || r.Rate > 0 {
		return r, 0, nil
	}
	var targets []string
	if st, ok := plan.Scenario.Step(r.BaseStep); ok {
		targets = st.Targets
	}
	if len(targets) == 0 {
		targets = []string{r.Target}
	}
	tool := r.Tool
	if !measuredBy(recs, r.CapacityStep, tool) {
		tool = equalload.Primary
		if !measuredBy(recs, r.CapacityStep, tool) {
			tool = ""
		}
	}
	caps, err := equalload.Capacities(recs, r.CapacityStep, tool, targets)
	if err != nil {
		return r, 0, fmt.Errorf("rate_from: %w", err)
	}
	rate, slowest, err := equalload.Rate(caps, r.LoadPercent)
	if err != nil {
		return r, 0, fmt.Errorf("rate_from: %w", err)
	}
	r.Rate = rate
	return r, slowest.RPS, nil
}

// measuredBy reports whether tool ran step in recs.
func measuredBy(recs []record.Record, step, tool string) bool {
	for _, rec := range recs {
		if rec.Step == step && rec.Tool == tool {
			return true
		}
	}
	return false
}
