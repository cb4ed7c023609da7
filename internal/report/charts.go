package report

import (
	"fmt"
	"html/template"
	"math"
	"sort"

	"github.com/protobench/protobench/internal/results"
	"github.com/protobench/protobench/internal/scenario"
	"github.com/protobench/protobench/internal/stats"
	"github.com/protobench/protobench/internal/svgchart"
	"github.com/protobench/protobench/internal/targets"
)

// targetOrder fixes each target's colour across every chart of a page: the registry's order,
// so a new target gets a colour of its own without an edit here.
var targetOrder = targets.Names()

func colorFor(target string, seen map[string]int) string {
	for i, t := range targetOrder {
		if t == target {
			return svgchart.Palette[i%len(svgchart.Palette)]
		}
	}
	if _, ok := seen[target]; !ok {
		seen[target] = len(seen)
	}
	return svgchart.Palette[(len(targetOrder)+seen[target])%len(svgchart.Palette)]
}

// barCharts draws a step without a matrix: one group per target, one bar per tool, with the
// median's exact interval as whiskers (none with one repeat).
func barCharts(b *baseStep) []figure {
	return bars(b, func(g *results.Group) string { return g.Target }, func(g *results.Group) string { return g.Tool }, nil)
}

// bars draws grouped bars of throughput and p99: category and series name each bar, and
// colour, when set, gives a series its colour from one of its groups.
func bars(b *baseStep, category, series func(*results.Group) string, colour func(*results.Group) string) []figure {
	var cats, names []string
	for _, g := range b.groups {
		cats = appendNew(cats, category(g))
		names = appendNew(names, series(g))
	}
	mk := func(title, unit string, pick func(*results.Group) stats.Summary) figure {
		c := svgchart.Bars{Title: title, Categories: cats, Y: svgchart.Axis{Label: unit}, Width: max(640, 28*len(cats)*len(names)+120)}
		for i, name := range names {
			s := svgchart.BarSeries{Name: name, Color: svgchart.Palette[i%len(svgchart.Palette)]}
			for _, g := range b.groups {
				if colour != nil && series(g) == name {
					s.Color = colour(g)
				}
			}
			if len(names) == 1 {
				// One series: each bar takes its target's colour, as in every other chart, and
				// the legend's swatch stays neutral.
				s.Color = "#555"
				seen := map[string]int{}
				for _, cat := range cats {
					for _, g := range b.groups {
						if category(g) == cat {
							s.Colors = append(s.Colors, colorFor(g.Target, seen))
							break
						}
					}
				}
			}
			for _, cat := range cats {
				v, lo, hi := math.NaN(), math.NaN(), math.NaN()
				for _, g := range b.groups {
					if category(g) == cat && series(g) == name {
						sum := pick(g)
						if sum.N > 0 {
							v = sum.Median
						}
						if sum.CI.OK {
							lo, hi = sum.CI.Lo, sum.CI.Hi
						}
					}
				}
				s.Values, s.Lo, s.Hi = append(s.Values, v), append(s.Lo, lo), append(s.Hi, hi)
			}
			c.Series = append(c.Series, s)
		}
		return figure{Caption: title + ": median over repeats, whiskers the exact order-statistic interval of the median (its coverage and n in the table below)", SVG: template.HTML(c.SVG())}
	}
	return []figure{
		mk(b.name+": throughput", "req/s", func(g *results.Group) stats.Summary { return g.Throughput }),
		mk(b.name+": p99 latency", "p99 ms", func(g *results.Group) stats.Summary { return g.P99 }),
	}
}

// dimension is one thing a matrix can sweep: numeric ones can be an x axis, the others only
// split lines or bars.
type dimension struct {
	label   string
	num     func(*results.Group) float64 // nil for a categorical dimension
	cat     func(*results.Group) string
	inSteps func(*scenario.Matrix) int // how many values the step's matrix lists
}

var dimensions = []dimension{
	{label: "requests in flight", num: func(g *results.Group) float64 { return float64(g.InFlight) }, inSteps: func(m *scenario.Matrix) int { return len(m.InFlight) }},
	{label: "connections", num: func(g *results.Group) float64 { return float64(g.Connections) }, inSteps: func(m *scenario.Matrix) int { return len(m.Connections) }},
	{label: "in flight per connection", num: func(g *results.Group) float64 { return float64(g.Concurrency) }, inSteps: func(m *scenario.Matrix) int { return len(m.Concurrency) }},
	{label: "payload bytes", num: func(g *results.Group) float64 { return float64(g.PayloadBytes) }, inSteps: func(m *scenario.Matrix) int { return len(m.PayloadBytes) }},
	{label: "target req/s", num: func(g *results.Group) float64 { return g.Rate }, inSteps: func(m *scenario.Matrix) int { return len(m.Rate) }},
	{label: "HTTP", cat: func(g *results.Group) string { return g.HTTPVersion }, inSteps: func(m *scenario.Matrix) int { return len(m.HTTPVersion) }},
	{label: "encoding", cat: func(g *results.Group) string { return g.Encoding }, inSteps: func(m *scenario.Matrix) int { return len(m.Encoding) }},
}

func (d dimension) text(g *results.Group) string {
	if d.num != nil {
		return svgchart.FormatNumber(d.num(g))
	}
	return d.cat(g)
}

// swept lists the dimensions a step sweeps: those its matrix lists, or, without the scenario,
// those whose values differ between its groups. Deriving the x axis from the matrix matters:
// sweeping in-flight requests moves connections for one target and streams for another.
func swept(b *baseStep) []dimension {
	var out []dimension
	for _, d := range dimensions {
		if b.step != nil && b.step.Matrix != nil {
			if d.inSteps(b.step.Matrix) > 1 {
				out = append(out, d)
			}
			continue
		}
		vals := map[string]bool{}
		for _, g := range b.groups {
			vals[d.text(g)] = true
		}
		if len(vals) > 1 {
			out = append(out, d)
		}
	}
	return out
}

// matrixCharts draws a swept step as lines: x the first numeric swept variable, one line per
// target (and tool, and value of any other swept variable). A step that sweeps only categories
// (HTTP version, encoding) gets bars, one group per variant.
func matrixCharts(b *baseStep) []figure {
	dims := swept(b)
	tools := groupsTools(b)
	lineName := func(g *results.Group, skip int) string {
		name := g.Target
		if len(tools) > 1 {
			name += " (" + g.Tool + ")"
		}
		for i, d := range dims {
			if i != skip {
				name += fmt.Sprintf(", %s %s", d.label, d.text(g))
			}
		}
		return name
	}
	x := -1
	for i, d := range dims {
		if d.num != nil {
			x = i
			break
		}
	}
	if x < 0 {
		return bars(b, func(g *results.Group) string { return g.Step }, func(g *results.Group) string {
			if len(tools) > 1 {
				return g.Target + " (" + g.Tool + ")"
			}
			return g.Target
		}, func(g *results.Group) string { return colorFor(g.Target, map[string]int{}) })
	}
	xd := dims[x]
	type lineKey struct{ name, target string }
	var keys []lineKey
	points := map[lineKey][2][]svgchart.Point{}
	var xs []float64
	for _, g := range b.groups {
		xs = append(xs, xd.num(g))
		if g.Throughput.N == 0 {
			continue
		}
		k := lineKey{lineName(g, x), g.Target}
		if _, ok := points[k]; !ok {
			keys = append(keys, k)
		}
		pts := points[k]
		pts[0] = append(pts[0], svgchart.Point{X: xd.num(g), Y: g.Throughput.Median})
		pts[1] = append(pts[1], svgchart.Point{X: xd.num(g), Y: g.P99.Median})
		points[k] = pts
	}
	xAxis := svgchart.Axis{Label: xd.label, Log: spread(xs) >= 10}
	if xAxis.Log {
		for _, v := range uniqueSorted(xs) {
			xAxis.Ticks = append(xAxis.Ticks, svgchart.Tick{Value: v, Label: svgchart.FormatNumber(v)})
		}
	}
	seen := map[string]int{}
	mk := func(title, unit string, i int) figure {
		c := svgchart.Lines{Title: title, X: xAxis, Y: svgchart.Axis{Label: unit}}
		var ys []float64
		for n, k := range keys {
			c.Series = append(c.Series, svgchart.LineSeries{Name: k.name, Color: colorFor(k.target, seen), Dashed: n > 0 && keys[n-1].target == k.target, Points: points[k][i]})
			for _, p := range points[k][i] {
				ys = append(ys, p.Y)
			}
		}
		c.Y.Log = i == 1 && spread(ys) >= 20
		return figure{Caption: title + " (medians over repeats)", SVG: template.HTML(c.SVG())}
	}
	return []figure{mk(b.name+": throughput by "+xd.label, "req/s", 0), mk(b.name+": p99 latency by "+xd.label, "p99 ms", 1)}
}

// spread is max/min of the positive values, 1 when there are none.
func spread(xs []float64) float64 {
	lo, hi := math.Inf(1), 0.0
	for _, x := range xs {
		if x > 0 {
			lo, hi = math.Min(lo, x), math.Max(hi, x)
		}
	}
	if hi == 0 {
		return 1
	}
	return hi / lo
}

func uniqueSorted(xs []float64) []float64 {
	seen := map[float64]bool{}
	var out []float64
	for _, x := range xs {
		if !seen[x] {
			seen[x] = true
			out = append(out, x)
		}
	}
	sort.Float64s(out)
	return out
}

func appendNew(xs []string, x string) []string {
	for _, y := range xs {
		if y == x {
			return xs
		}
	}
	return append(xs, x)
}

func groupsTargets(b *baseStep) []string {
	var targets []string
	for _, g := range b.groups {
		targets = appendNew(targets, g.Target)
	}
	return targets
}

func index(xs []string, x string) int {
	for i, y := range xs {
		if y == x {
			return i
		}
	}
	return -1
}

func groupsTools(b *baseStep) []string {
	var tools []string
	for _, g := range b.groups {
		tools = appendNew(tools, g.Tool)
	}
	return tools
}

// cpuChart draws server CPU µs per request for every variant that has it: one group per
// variant, one bar per target, with the median's interval.
func cpuChart(f *Folder) template.HTML {
	var steps, targets []string
	for _, g := range f.Summary.Groups {
		if !math.IsNaN(g.CPUMicrosPerRequest) && g.CPUMicrosPerRequest > 0 {
			steps = appendNew(steps, g.Step)
			targets = appendNew(targets, g.Target)
		}
	}
	if len(steps) == 0 {
		return ""
	}
	c := svgchart.Bars{Title: "Server CPU per request", Categories: steps, Y: svgchart.Axis{Label: "CPU µs per request"}, Width: max(640, 40*len(steps)*len(targets)+120)}
	seen := map[string]int{}
	for _, t := range targets {
		s := svgchart.BarSeries{Name: t, Color: colorFor(t, seen)}
		for _, st := range steps {
			var vals []float64
			for _, g := range f.Summary.Groups {
				// The primary tool's runs are the comparison; others only where it did not run.
				if g.Step == st && g.Target == t && (g.Tool == results.PrimaryTool || len(vals) == 0) {
					vals = nil
					for _, i := range runsOf(f, g) {
						if v, ok := results.MetricValue(f.Records[i], scenario.MetricCPUMicrosPerReq); ok {
							vals = append(vals, v)
						}
					}
				}
			}
			sum := stats.Summarize(vals)
			lo, hi := math.NaN(), math.NaN()
			if sum.CI.OK {
				lo, hi = sum.CI.Lo, sum.CI.Hi
			}
			s.Values, s.Lo, s.Hi = append(s.Values, sum.Median), append(s.Lo, lo), append(s.Hi, hi)
		}
		c.Series = append(c.Series, s)
	}
	return template.HTML(c.SVG())
}
