package results

import "github.com/protobench/protobench/internal/scenario"

// KneeRow is the highest throughput of a swept step whose median p99 stays under the threshold.
type KneeRow struct {
	BaseStep, Target, Tool string
	ThresholdMs            float64
	Group                  *Group // nil when no variant stayed under the threshold
}

// knees finds, for each step with knee_p99_ms, the best throughput under the p99 threshold.
func knees(plan *scenario.Plan, groups []*Group) []KneeRow {
	if plan == nil || plan.Scenario == nil {
		return nil
	}
	var rows []KneeRow
	for i := range plan.Scenario.Steps {
		st := &plan.Scenario.Steps[i]
		if st.KneeP99Ms <= 0 {
			continue
		}
		type tt struct{ target, tool string }
		var keys []tt
		seen := map[tt]bool{}
		for _, g := range groups {
			k := tt{g.Target, g.Tool}
			if g.BaseStep == st.Name && !seen[k] {
				seen[k] = true
				keys = append(keys, k)
			}
		}
		for _, k := range keys {
			row := KneeRow{BaseStep: st.Name, Target: k.target, Tool: k.tool, ThresholdMs: st.KneeP99Ms}
			row.Group = kneeGroup(groups, st.Name, k.target, k.tool, st.KneeP99Ms)
			rows = append(rows, row)
		}
	}
	return rows
}

func kneeGroup(groups []*Group, base, target, tool string, threshold float64) *Group {
	var best *Group
	for _, g := range groups {
		if g.BaseStep != base || g.Target != target || g.Tool != tool || g.Throughput.N == 0 {
			continue
		}
		if g.P99.Median < threshold && (best == nil || g.Throughput.Median > best.Throughput.Median) {
			best = g
		}
	}
	return best
}
