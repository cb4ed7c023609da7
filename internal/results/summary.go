package results

import (
	"math"
	"sort"

	"github.com/protobench/protobench/internal/record"
	"github.com/protobench/protobench/internal/scenario"
	"github.com/protobench/protobench/internal/stats"
)

// CILevel is the coverage every interval in the summary aims for. Order-statistic intervals of a
// median reach it only from six repeats; below that each prints its real coverage.
const CILevel = stats.Level

// PrimaryTool is the tool whose numbers are the comparison; the others are cross-checks.
const PrimaryTool = "protobench"

// Summary is what summary.md and the terminal table show, computed once from the records.
type Summary struct {
	Plan      *scenario.Plan // may be nil: then no published comparison and no caps
	Groups    []*Group       // one per step variant, target and tool, in plan order
	Ratios    []RatioRow
	Knees     []KneeRow
	Agreement []AgreementRow
	Published []FigureRow
	// Topologies says per step how each target was driven; Sweeps and Cells explain figures
	// that differ (see explain.go).
	Topologies []TopologyRow
	Sweeps     []TopologySweep
	Cells      []CellTable
	// Links is where step rows point; the zero value links to report.html only.
	Links Links
}

// Group is the repeats of one step variant on one target with one tool.
type Group struct {
	Step, BaseStep, Target, Tool string
	Method, Model                string
	Connections, Concurrency     int
	Rate                         float64
	PayloadBytes                 int
	InFlight                     int
	Topology                     string // in words, from the record
	HTTPVersion, Encoding        string // HTTP targets only

	Runs   int // records, failed ones included
	Failed int

	Throughput stats.Summary // requests (messages) per second
	P99        stats.Summary // ms
	MeanMs     float64       // median over repeats of the mean latency
	P50Ms      float64

	ServerCPUPercent    float64 // medians over repeats; NaN when no repeat had the value
	ServerMemMaxBytes   float64
	CPUMicrosPerRequest float64

	ServerCPUs float64 // the run's server CPU cap from the plan; 0 when unknown
	Flags      []FlagCount

	valid []record.Record
}

// FlagCount is a flag and how many of the group's repeats carry it.
type FlagCount struct {
	Flag  string
	Count int
}

// RatioRow compares one target with the step's baseline target, for one tool: unpaired (all
// repeats of each side) and paired (the two targets' runs of the same repeat).
type RatioRow struct {
	Step, Tool, Target, Baseline string
	Throughput                   float64 // geometric mean(target) / geometric mean(baseline)
	ThroughputCI                 stats.Interval
	P99                          float64
	P99CI                        stats.Interval
	// Paired ratios: geometric means of the per-repeat ratios, over Pairs repeats where both
	// targets have a valid run.
	Pairs                           int
	ThroughputPaired, P99Paired     float64
	ThroughputPairedCI, P99PairedCI stats.Interval
	// Flags are the flags of the runs beneath the ratio, both targets' counted together, out of
	// Runs runs.
	Flags       []FlagCount
	Runs        int
	Group, Base *Group
}

// Flagged says whether any run beneath the ratio carries a flag.
func (r RatioRow) Flagged() bool { return len(r.Flags) > 0 }

// KneeRow is the highest throughput of a swept step whose median p99 stays under the threshold.
type KneeRow struct {
	BaseStep, Target, Tool string
	ThresholdMs            float64
	Group                  *Group // nil when no variant stayed under the threshold
}

// AgreementRow compares a cross-check tool with the reference tool on the same workload.
type AgreementRow struct {
	Target, Workload string
	Reference, Tool  *Group
	Throughput, P99  float64 // tool / reference, medians
}

// FigureRow is one published figure beside ours.
type FigureRow struct {
	Figure        scenario.Figure
	Group         *Group  // nil for a cited-only figure or a step that did not run
	Ours          float64 // in the figure's unit; NaN when there is nothing to compare
	Ratio         float64 // ours / theirs
	TheirCores    int
	TheirsPerCore float64 // NaN unless per core means something and the cores are known
	OursPerCore   float64
	// Versus is the group a gain figure (throughput_gain_percent) divides Group by, and CI the
	// interval of its Ours (gain.go). Other figures compare one median and leave both empty. A
	// gain leaves Ratio NaN: a ratio of two gains means little near 0.
	Versus *Group
	CI     stats.Interval
}

// Summarize groups records into repeats and computes every statistic the reports show.
func Summarize(plan *scenario.Plan, recs []record.Record) *Summary {
	recs = normalize(recs)
	ApplyFlags(recs)
	s := &Summary{Plan: plan}
	s.Groups = buildGroups(plan, recs)
	s.Ratios = ratios(plan, s.Groups)
	s.Knees = knees(plan, s.Groups)
	s.Agreement = agreement(s.Groups)
	s.Published = published(plan, s.Groups)
	s.Topologies = topologies(s.Groups)
	s.Sweeps = topologySweeps(s.Groups)
	s.Cells = cellTables(plan, s.Groups)
	return s
}

type runInfo struct {
	order      int
	baseStep   string
	serverCPUs float64
}

func buildGroups(plan *scenario.Plan, recs []record.Record) []*Group {
	info := map[groupKey]runInfo{}
	if plan != nil {
		for _, r := range plan.Runs {
			k := groupKey{plan.Scenario.Name, r.Step, r.Target, r.Tool}
			// By the run's index in the scenario's own order, not its place in the plan: a
			// shuffled plan (PlanOptions.Seed) must not reorder the tables or change which
			// target a step's ratios divide by.
			if in, seen := info[k]; !seen || r.Index < in.order {
				info[k] = runInfo{order: r.Index, baseStep: r.BaseStep, serverCPUs: r.Caps.ServerCPUs}
			}
		}
	}
	byKey := map[groupKey]*Group{}
	order := map[*Group]int{}
	var groups []*Group
	for i, r := range recs {
		k := keyOf(r)
		g, ok := byKey[k]
		if !ok {
			g = &Group{Step: r.Step, BaseStep: r.Step, Target: r.Target, Tool: r.Tool, Method: r.Method, Model: r.Model,
				Connections: r.Connections, Concurrency: r.Concurrency, Rate: r.Rate, PayloadBytes: r.PayloadBytes,
				InFlight: r.InFlight, Topology: r.Topology, HTTPVersion: r.HTTPVersion, Encoding: r.Encoding}
			order[g] = maxIndex(plan) + 1 + i
			if in, known := info[k]; known {
				g.BaseStep, g.ServerCPUs = in.baseStep, in.serverCPUs
				order[g] = in.order
			} else if plan != nil && plan.Scenario != nil {
				// A record from a run outside this plan (e.g. an earlier --only): its step
				// still belongs to the scenario, only the cap is unknown.
				if v, ok := plan.Scenario.Variant(r.Step); ok {
					g.BaseStep = v.Step.Name
				}
			}
			byKey[k] = g
			groups = append(groups, g)
		}
		g.Runs++
		if !r.Valid() {
			g.Failed++
		} else {
			g.valid = append(g.valid, r)
		}
	}
	sort.SliceStable(groups, func(i, j int) bool { return order[groups[i]] < order[groups[j]] })
	for _, g := range groups {
		g.Throughput = stats.Summarize(g.values(scenario.MetricThroughputRPS))
		g.P99 = stats.Summarize(g.values(scenario.MetricLatencyP99Ms))
		g.MeanMs = stats.Median(g.values(scenario.MetricLatencyMeanMs))
		g.P50Ms = stats.Median(g.values(scenario.MetricLatencyP50Ms))
		g.ServerCPUPercent = stats.Median(g.values(scenario.MetricServerCPUPercent))
		g.ServerMemMaxBytes = stats.Median(g.values(scenario.MetricServerMemMaxBytes))
		g.CPUMicrosPerRequest = stats.Median(g.values(scenario.MetricCPUMicrosPerReq))
		g.Flags = flagCounts(g, recs)
	}
	return groups
}

// maxIndex is the largest run index of the plan (0 without one), so that buildGroups orders
// unplanned records after planned ones.
func maxIndex(p *scenario.Plan) int {
	m := 0
	if p != nil {
		for _, r := range p.Runs {
			m = max(m, r.Index)
		}
	}
	return m
}

func flagCounts(g *Group, recs []record.Record) []FlagCount {
	counts := map[string]int{}
	for _, r := range recs {
		if r.Step == g.Step && r.Target == g.Target && r.Tool == g.Tool {
			for _, f := range r.Flags {
				counts[f]++
			}
		}
	}
	flags := make([]string, 0, len(counts))
	for f := range counts {
		flags = append(flags, f)
	}
	sortFlags(flags)
	out := make([]FlagCount, len(flags))
	for i, f := range flags {
		out[i] = FlagCount{f, counts[f]}
	}
	return out
}

// MetricValue reads a scenario metric from a record, in the metric's canonical unit; false when
// the record does not hold it (e.g. no server CPU because Prometheus had no samples).
func MetricValue(r record.Record, metric string) (float64, bool) {
	switch metric {
	case scenario.MetricThroughputRPS:
		return r.ThroughputRPS, true
	case scenario.MetricThroughputMBs:
		return r.ThroughputRPS * float64(r.PayloadBytes) / 1e6, r.PayloadBytes > 0
	case scenario.MetricLatencyMeanMs:
		return r.LatencyMs.Mean, true
	case scenario.MetricLatencyP50Ms:
		return r.LatencyMs.P50, true
	case scenario.MetricLatencyP90Ms:
		return r.LatencyMs.P90, true
	case scenario.MetricLatencyP99Ms:
		return r.LatencyMs.P99, true
	case scenario.MetricLatencyP999Ms:
		return r.LatencyMs.P999, true
	case scenario.MetricLatencyMaxMs:
		return r.LatencyMs.Max, true
	case scenario.MetricServerCPUPercent:
		return r.ServerCPUPercentOfCap, r.ServerCPUPercentOfCap > 0
	case scenario.MetricServerMemMaxBytes:
		return r.ServerMemMaxBytes, r.ServerMemMaxBytes > 0
	case scenario.MetricCPUMicrosPerReq:
		return r.CPUMicrosPerRequest, r.CPUMicrosPerRequest > 0
	}
	return 0, false
}

func (g *Group) values(metric string) []float64 {
	var xs []float64
	for _, r := range g.valid {
		if v, ok := MetricValue(r, metric); ok {
			xs = append(xs, v)
		}
	}
	return xs
}

// Median is the group's median of a metric over its valid repeats, NaN when none holds it.
func (g *Group) Median(metric string) float64 {
	return stats.Median(g.values(metric))
}

// ratios compares every target of a step with its baseline, per tool.
func ratios(plan *scenario.Plan, groups []*Group) []RatioRow {
	type stepTool struct{ step, tool string }
	var keys []stepTool
	byKey := map[stepTool][]*Group{}
	for _, g := range groups {
		k := stepTool{g.Step, g.Tool}
		if _, ok := byKey[k]; !ok {
			keys = append(keys, k)
		}
		byKey[k] = append(byKey[k], g)
	}
	var rows []RatioRow
	for _, k := range keys {
		gs := byKey[k]
		if len(gs) < 2 {
			continue
		}
		base := gs[0]
		if st := stepOf(plan, gs[0].BaseStep); st != nil && st.Baseline != "" {
			for _, g := range gs {
				if g.Target == st.Baseline {
					base = g
				}
			}
		}
		for _, g := range gs {
			if g == base {
				continue
			}
			row := RatioRow{Step: k.step, Tool: k.tool, Target: g.Target, Baseline: base.Target, Group: g, Base: base}
			row.Throughput, row.ThroughputCI = stats.Ratio(g.values(scenario.MetricThroughputRPS), base.values(scenario.MetricThroughputRPS), CILevel)
			row.P99, row.P99CI = stats.Ratio(g.values(scenario.MetricLatencyP99Ms), base.values(scenario.MetricLatencyP99Ms), CILevel)
			num, den := pairedValues(g, base, scenario.MetricThroughputRPS)
			row.Pairs = len(num)
			row.ThroughputPaired, row.ThroughputPairedCI = stats.PairedRatio(num, den, CILevel)
			num, den = pairedValues(g, base, scenario.MetricLatencyP99Ms)
			row.P99Paired, row.P99PairedCI = stats.PairedRatio(num, den, CILevel)
			row.Flags, row.Runs = mergeFlags(g, base), g.Runs+base.Runs
			rows = append(rows, row)
		}
	}
	return rows
}

// pairedValues matches the two groups' valid runs by repeat: the runs of one repeat ran one
// right after the other (in shuffled order), so what drifted between repeats moves both.
func pairedValues(g, base *Group, metric string) (num, den []float64) {
	byRepeat := map[int]float64{}
	for _, r := range base.valid {
		if v, ok := MetricValue(r, metric); ok {
			byRepeat[r.Repeat] = v
		}
	}
	for _, r := range g.valid {
		v, ok := MetricValue(r, metric)
		d, both := byRepeat[r.Repeat]
		if ok && both {
			num, den = append(num, v), append(den, d)
		}
	}
	return num, den
}

// mergeFlags counts the flags of both groups' runs together.
func mergeFlags(a, b *Group) []FlagCount {
	counts := map[string]int{}
	var order []string
	for _, g := range []*Group{a, b} {
		for _, f := range g.Flags {
			if _, seen := counts[f.Flag]; !seen {
				order = append(order, f.Flag)
			}
			counts[f.Flag] += f.Count
		}
	}
	sortFlags(order)
	out := make([]FlagCount, len(order))
	for i, f := range order {
		out[i] = FlagCount{f, counts[f]}
	}
	return out
}

func stepOf(plan *scenario.Plan, base string) *scenario.Step {
	if plan == nil || plan.Scenario == nil {
		return nil
	}
	st, _ := plan.Scenario.Step(base)
	return st
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

// agreement pairs groups that ran the same workload on the same target with different tools.
func agreement(groups []*Group) []AgreementRow {
	type workload struct {
		target, method, model string
		conn, conc, payload   int
		rate                  float64
	}
	var keys []workload
	byKey := map[workload][]*Group{}
	for _, g := range groups {
		if g.Throughput.N == 0 {
			continue
		}
		k := workload{g.Target, g.Method, g.Model, g.Connections, g.Concurrency, g.PayloadBytes, g.Rate}
		if _, ok := byKey[k]; !ok {
			keys = append(keys, k)
		}
		dup := false
		for _, other := range byKey[k] {
			dup = dup || other.Tool == g.Tool
		}
		if !dup {
			byKey[k] = append(byKey[k], g)
		}
	}
	var rows []AgreementRow
	for _, k := range keys {
		gs := byKey[k]
		if len(gs) < 2 {
			continue
		}
		ref := gs[0]
		for _, g := range gs {
			if g.Tool == PrimaryTool {
				ref = g
			}
		}
		for _, g := range gs {
			if g == ref {
				continue
			}
			rows = append(rows, AgreementRow{
				Target: k.target, Workload: workloadName(g), Reference: ref, Tool: g,
				Throughput: g.Throughput.Median / ref.Throughput.Median,
				P99:        g.P99.Median / ref.P99.Median,
			})
		}
	}
	return rows
}

// published sets each figure beside the matching group of ours.
func published(plan *scenario.Plan, groups []*Group) []FigureRow {
	if plan == nil || plan.Scenario == nil || plan.Scenario.Published == nil {
		return nil
	}
	pub := plan.Scenario.Published
	var rows []FigureRow
	for _, fig := range pub.Figures {
		base := FigureRow{Figure: fig, Ours: math.NaN(), Ratio: math.NaN(), TheirCores: pub.CoresFor(fig),
			TheirsPerCore: math.NaN(), OursPerCore: math.NaN()}
		if fig.Metric == "" {
			rows = append(rows, base)
			continue
		}
		matches := figureGroups(plan, groups, fig)
		if len(matches) == 0 {
			rows = append(rows, base)
			continue
		}
		for _, g := range matches {
			row := base
			row.Group = g
			if isGain(fig) {
				if row.Versus = versusGroup(plan, groups, g, fig); row.Versus != nil {
					row.Ours, row.CI = throughputGain(g, row.Versus)
				}
				rows = append(rows, row)
				continue
			}
			if v := g.Median(fig.Metric); !math.IsNaN(v) {
				row.Ours = fig.InUnit(v)
				if fig.Value != 0 {
					row.Ratio = row.Ours / fig.Value
				}
				if scenario.PerCore(fig.Metric) {
					if row.TheirCores > 0 {
						row.TheirsPerCore = fig.Value / float64(row.TheirCores)
					}
					if g.ServerCPUs > 0 {
						row.OursPerCore = row.Ours / g.ServerCPUs
					}
				}
			}
			rows = append(rows, row)
		}
	}
	return rows
}

// figureGroups finds the groups a figure compares with: its step, target and tool (the step's
// primary tool by default), the variants its match selects, narrowed to one by at: max or knee.
func figureGroups(plan *scenario.Plan, groups []*Group, fig scenario.Figure) []*Group {
	st := stepOf(plan, fig.Step)
	if st == nil {
		return nil
	}
	tool := fig.Tool
	if tool == "" {
		for _, v := range st.Variants() {
			for _, t := range v.Tools {
				for _, g := range groups {
					if tool == "" && g.BaseStep == st.Name && g.Target == fig.Target && g.Tool == t {
						tool = t
					}
				}
			}
		}
	}
	var out []*Group
	for _, g := range groups {
		if g.BaseStep != st.Name || g.Target != fig.Target || g.Tool != tool || g.Throughput.N == 0 {
			continue
		}
		if v, ok := plan.Scenario.Variant(g.Step); ok && !scenario.MatchVariant(fig.Match, v) {
			continue
		}
		out = append(out, g)
	}
	switch fig.At {
	case scenario.AtMax:
		var best *Group
		for _, g := range out {
			if best == nil || g.Throughput.Median > best.Throughput.Median {
				best = g
			}
		}
		if best == nil {
			return nil
		}
		return []*Group{best}
	case scenario.AtKnee:
		if k := kneeGroup(out, st.Name, fig.Target, tool, st.KneeP99Ms); k != nil {
			return []*Group{k}
		}
		return nil
	}
	return out
}
