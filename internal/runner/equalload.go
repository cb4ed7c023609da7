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
// looks at the same capacity records, which all precede the step.
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
	caps, err := equalload.Capacities(recs, r.CapacityStep, r.Tool, targets)
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
