package results

import (
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

func stepOf(plan *scenario.Plan, base string) *scenario.Step {
	if plan == nil || plan.Scenario == nil {
		return nil
	}
	st, _ := plan.Scenario.Step(base)
	return st
}
