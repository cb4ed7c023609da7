package report

import (
	"fmt"
	"sort"
	"strconv"
	"strings"

	"github.com/protobench/protobench/internal/results"
	"github.com/protobench/protobench/internal/scenario"
	"github.com/protobench/protobench/internal/stats"
	"github.com/protobench/protobench/internal/svgchart"
)

type variantRow struct {
	ID, Name, Target, Tool, Workload string
	N                                int
	Throughput, P99, CPU, Flags      string
	Interval                         string // what the intervals are: order statistics, coverage, n
	// Cores is how the server's cores spent the window: user / system / softirq / idle, in
	// percent, medians over the repeats; empty where node-exporter did not tell.
	Cores string
}

type stepSection struct {
	ID, Name, Description, Workload string
	Headline, Matrix                bool
	Charts                          []figure
	Variants                        []variantRow
	Spectra                         []figure
	Timelines                       []figure
	NoSeconds                       []string
}

// baseStep is one step of the scenario file with the groups of its variants.
type baseStep struct {
	name, description string
	step              *scenario.Step
	groups            []*results.Group
}

func baseSteps(f *Folder) []*baseStep {
	var out []*baseStep
	byName := map[string]*baseStep{}
	if f.Plan != nil {
		for i := range f.Plan.Scenario.Steps {
			st := &f.Plan.Scenario.Steps[i]
			b := &baseStep{name: st.Name, description: st.Description, step: st}
			byName[st.Name] = b
			out = append(out, b)
		}
	}
	for _, g := range f.Summary.Groups {
		b, ok := byName[g.BaseStep]
		if !ok {
			b = &baseStep{name: g.BaseStep}
			byName[g.BaseStep] = b
			out = append(out, b)
		}
		b.groups = append(b.groups, g)
	}
	// Steps the run never reached (an interrupted or --only run) have no section.
	kept := out[:0]
	for _, b := range out {
		if len(b.groups) > 0 {
			kept = append(kept, b)
		}
	}
	return kept
}

func (b *baseStep) matrix() bool {
	if b.step != nil && b.step.Matrix != nil {
		return true
	}
	seen := map[string]bool{}
	for _, g := range b.groups {
		seen[g.Step] = true
	}
	return len(seen) > 1
}

func sections(f *Folder) []stepSection {
	var out []stepSection
	headline := false
	for _, b := range baseSteps(f) {
		s := stepSection{ID: StepID(b.name), Name: b.name, Description: b.description, Matrix: b.matrix()}
		if len(b.groups) > 0 {
			s.Workload = workload(b.groups[0], s.Matrix)
		}
		if !s.Matrix && !headline {
			s.Headline, headline = true, true
		}
		if s.Matrix {
			s.Charts = matrixCharts(b)
		} else {
			s.Charts = barCharts(b)
		}
		for _, g := range b.groups {
			s.Variants = append(s.Variants, variantRow{
				ID: StepID(g.Step), Name: g.Step, Target: g.Target, Tool: g.Tool, Workload: workload(g, false),
				N: g.Throughput.N, Throughput: withCI(g.Throughput), P99: withCI(g.P99), Interval: results.IntervalLabel(g.Throughput),
				CPU: svgchart.FormatNumber(g.CPUMicrosPerRequest), Flags: flagText(g), Cores: serverCores(f, g),
			})
		}
		s.Spectra = spectra(f, b)
		s.Timelines, s.NoSeconds = timelines(f, b)
		out = append(out, s)
	}
	// The headline leads the page.
	sort.SliceStable(out, func(i, j int) bool { return out[i].Headline && !out[j].Headline })
	return out
}

func workload(g *results.Group, matrix bool) string {
	model := g.Model
	if model != "open" {
		// A closed loop's latency is in-flight / throughput: say so wherever it shows.
		model = "closed loop"
	}
	parts := []string{g.Method, model}
	if !matrix {
		parts = append(parts, fmt.Sprintf("%d conn × %d in flight", g.Connections, g.Concurrency))
		if g.Rate > 0 {
			parts = append(parts, svgchart.FormatNumber(g.Rate)+" req/s target")
		}
		if g.PayloadBytes > 0 {
			parts = append(parts, fmt.Sprintf("%d B payload", g.PayloadBytes))
		}
		if g.HTTPVersion != "" {
			parts = append(parts, "HTTP/"+g.HTTPVersion)
		}
		if g.Encoding != "" {
			parts = append(parts, g.Encoding)
		}
	}
	return strings.Join(parts, ", ")
}

func withCI(s stats.Summary) string {
	if s.N == 0 {
		return "n/a"
	}
	if !s.CI.OK {
		return svgchart.FormatNumber(s.Median)
	}
	return fmt.Sprintf("%s (%s–%s)", svgchart.FormatNumber(s.Median), svgchart.FormatNumber(s.CI.Lo), svgchart.FormatNumber(s.CI.Hi))
}

func flagText(g *results.Group) string {
	var parts []string
	for _, fc := range g.Flags {
		parts = append(parts, fmt.Sprintf("%s (%d)", fc.Flag, fc.Count))
	}
	return strings.Join(parts, ", ")
}

// runsOf lists the indexes of a group's valid records, in repeat order.
func runsOf(f *Folder, g *results.Group) []int {
	var idx []int
	for i, r := range f.Records {
		if r.Step == g.Step && r.Target == g.Target && r.Tool == g.Tool && r.Valid() {
			idx = append(idx, i)
		}
	}
	sort.SliceStable(idx, func(a, b int) bool { return f.Records[idx[a]].Repeat < f.Records[idx[b]].Repeat })
	return idx
}

// serverCores is how the server's cores spent the group's windows, as "user / system / softirq /
// idle" percentages, each the median over the repeats that have it.
func serverCores(f *Folder, g *results.Group) string {
	var user, system, softirq, idle []float64
	for _, i := range runsOf(f, g) {
		if c := f.Records[i].ServerCores; c != nil {
			user, system = append(user, c.UserPercent), append(system, c.SystemPercent)
			softirq, idle = append(softirq, c.SoftirqPercent), append(idle, c.IdlePercent)
		}
	}
	if len(user) == 0 {
		return ""
	}
	med := func(xs []float64) string { return strconv.FormatFloat(stats.Summarize(xs).Median, 'f', 0, 64) }
	return med(user) + " / " + med(system) + " / " + med(softirq) + " / " + med(idle)
}

// medianRun is the index of the group's repeat with the median throughput, -1 for none.
func medianRun(f *Folder, g *results.Group) int {
	idx := runsOf(f, g)
	if len(idx) == 0 {
		return -1
	}
	sort.SliceStable(idx, func(a, b int) bool { return f.Records[idx[a]].ThroughputRPS < f.Records[idx[b]].ThroughputRPS })
	return idx[(len(idx)-1)/2]
}
