// Package report writes report.html into a results folder: one self-contained page (inline SVG
// and CSS, no scripts, nothing fetched) with the run's metadata, a chart for every step, latency
// spectra, per-second timelines, server CPU per request, the published figures beside ours, the
// flags and links to the raw files, so a run can be looked at where no Grafana runs.
package report

import (
	"bytes"
	"fmt"
	"html/template"
	"math"
	"path/filepath"
	"sort"
	"strconv"
	"strings"

	"github.com/protobench/protobench/internal/results"
	"github.com/protobench/protobench/internal/scenario"
	"github.com/protobench/protobench/internal/stats"
	"github.com/protobench/protobench/internal/svgchart"
	"github.com/protobench/protobench/internal/targets"
)

// File is the report's name inside a results folder.
const File = "report.html"

// Write reads the results folder dir and replaces dir/report.html atomically. The runner calls
// it at the end of every run, interrupted ones included, and `protobench report` for any folder.
func Write(dir string) error {
	f, err := Load(dir)
	if err != nil {
		return err
	}
	var buf bytes.Buffer
	if err := Render(&buf, f); err != nil {
		return err
	}
	if err := results.WriteFileAtomic(filepath.Join(dir, File), buf.Bytes()); err != nil {
		return fmt.Errorf("report: %w", err)
	}
	return nil
}

// StepID is the HTML id of a step's section (or a matrix variant's row): "step-<name>". The
// summary's links point here.
func StepID(step string) string { return results.StepAnchor(step) }

// Render writes the report page for a loaded folder.
func Render(w *bytes.Buffer, f *Folder) error {
	return pageTemplate.Execute(w, buildPage(f))
}

type kv struct{ Key, Value string }

type figure struct {
	Caption string
	SVG     template.HTML
}

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

type publishedRow struct {
	Name, Measures, Published, Ours, Ratio, Step, Verdict, Note string
}

type flagRow struct {
	Flag, Meaning, Where string
	Raised               bool
}

type page struct {
	Title, Description string
	CSS                template.CSS
	Status             string
	Meta               []kv
	Images             []kv
	Notes              []string
	PlanNote           string
	Sections           []stepSection
	EqualLoad          *equalLoadSection
	CPU                template.HTML
	PublishedTitle     string
	PublishedHow       string
	Published          []publishedRow
	Differences        []string
	Flags              []flagRow
	Raw                []string
	Answer             *answerBlock
	Ratios             []ratioRow
	EqualLoadID        string
	NoEqualLoad        string // why the answer's latency line has no table to point to
}

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

func buildPage(f *Folder) page {
	p := page{CSS: template.CSS(svgchart.CSS + "\n" + PageCSS)}
	name := f.Run.Scenario
	if name == "" && len(f.Records) > 0 {
		name = f.Records[0].Scenario
	}
	p.Title = "protobench: " + name
	if f.Plan != nil {
		p.Description = f.Plan.Scenario.Description
	} else if f.PlanErr != nil {
		p.PlanNote = fmt.Sprintf("The scenario file could not be read back (%v): charts use the records alone, without the published figures.", f.PlanErr)
	}
	p.Status = status(f)
	p.Meta, p.Images = metadata(f)
	p.Notes = f.Run.Notes
	p.Sections = sections(f)
	p.Answer, p.Ratios = answer(f)
	p.EqualLoad = equalLoad(f)
	p.EqualLoadID = results.EqualLoadAnchor
	if p.EqualLoad == nil && p.Answer != nil {
		p.NoEqualLoad = results.NoEqualLoad
	}
	p.CPU = cpuChart(f)
	publishedTable(f, &p)
	p.Flags = flagRows(f)
	p.Raw = f.RawFiles
	return p
}

func status(f *Folder) string {
	planned := 0
	if f.Plan != nil {
		planned = len(f.Plan.Runs)
	}
	var parts []string
	if f.Run.Finished == nil {
		parts = append(parts, "run.json has no finish time: this run was interrupted (or is still going)")
	}
	if planned > 0 && len(f.Records) < planned {
		parts = append(parts, fmt.Sprintf("%d of %d planned runs are recorded", len(f.Records), planned))
	}
	if f.Run.Quick {
		parts = append(parts, "quick mode: runs cut short and one repeat, not for quoting")
	}
	if len(f.Records) == 0 {
		parts = append(parts, "no measurement was recorded")
	}
	return strings.Join(parts, "; ")
}

func metadata(f *Folder) ([]kv, []kv) {
	r := f.Run
	h := r.Host
	commit := h.GitCommit
	if h.GitDirty {
		commit += " (with uncommitted changes)"
	}
	compose := r.ComposeVersion
	if compose == "" {
		compose = h.ComposeVersion
	}
	finished := "—"
	if r.Finished != nil {
		finished = r.Finished.UTC().Format("2006-01-02 15:04:05 UTC")
	}
	meta := []kv{
		{"Run", r.RunID},
		{"Scenario", r.Scenario},
		{"Scenario sha256", r.ScenarioSHA256},
		{"Command", strings.Join(r.Command, " ")},
		{"Started", r.Started.UTC().Format("2006-01-02 15:04:05 UTC")},
		{"Finished", finished},
		{"CPU", fmt.Sprintf("%s, %d cores", h.CPUModel, h.Cores)},
		{"Memory", fmt.Sprintf("%.1f GiB", float64(h.MemoryBytes)/(1<<30))},
		{"OS, kernel", fmt.Sprintf("%s, %s (cgroup v%d)", h.OS, h.Kernel, h.CgroupVersion)},
		{"Docker, Compose", fmt.Sprintf("%s, %s", h.DockerVersion, compose)},
		{"Go (protobench)", h.GoVersion},
		{"Git commit", commit},
		{"CPU layout", fmt.Sprintf("server cpuset %s, client cpuset %s, observability cpuset %s%s", r.Layout.ServerCPUSet, r.Layout.ClientCPUSet, r.Layout.ObservabilityCPUSet, results.StackPlaces(f.Records))},
	}
	var imgs []kv
	for _, im := range r.Images {
		v := im.Source
		if im.ID != "" {
			v += ", " + shortID(im.ID)
		}
		if im.Variant != "" {
			v += ", " + im.Variant
		}
		if im.Note != "" {
			v += ": " + im.Note
		}
		imgs = append(imgs, kv{im.Name, v})
	}
	return meta, imgs
}

func shortID(id string) string {
	id = strings.TrimPrefix(id, "sha256:")
	if len(id) > 12 {
		return id[:12]
	}
	return id
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

// spectrumTicks are the percentiles a tail plot labels.
var spectrumTicks = []svgchart.Tick{{Value: 50, Label: "p50"}, {Value: 90, Label: "p90"}, {Value: 99, Label: "p99"}, {Value: 99.9, Label: "p99.9"}, {Value: 99.99, Label: "p99.99"}}

// tail spreads the percentiles out so that each nine gets the same width.
func tail(p float64) float64 { return 1 / (1 - p/100) }

// spectra draws, per variant, each target's latency by percentile from p50 to p99.99 on log
// axes, from the repeat with the median throughput. Tools that give only summary percentiles
// are drawn from those.
func spectra(f *Folder, b *baseStep) []figure {
	var variants []string
	for _, g := range b.groups {
		variants = appendNew(variants, g.Step)
	}
	var out []figure
	seen := map[string]int{}
	for _, v := range variants {
		c := svgchart.Lines{
			Title: v + ": latency by percentile",
			X:     svgchart.Axis{Label: "percentile", Log: true, Transform: tail, Ticks: spectrumTicks, Min: 50, Max: 99.99},
			Y:     svgchart.Axis{Label: "latency ms", Log: true},
		}
		summaryOnly := false
		for _, g := range b.groups {
			if g.Step != v {
				continue
			}
			i := medianRun(f, g)
			if i < 0 {
				continue
			}
			name := g.Target
			if len(groupsTools(b)) > 1 {
				name += " (" + g.Tool + ")"
			}
			var pts []svgchart.Point
			if sp := f.PerRun[i].Spectrum; len(sp) > 0 {
				for _, q := range sp {
					if q.Percentile >= 50 && q.Percentile <= 99.99 && q.ValueMs > 0 {
						pts = append(pts, svgchart.Point{X: q.Percentile, Y: q.ValueMs})
					}
				}
			} else {
				l := f.Records[i].LatencyMs
				for _, q := range []svgchart.Point{{X: 50, Y: l.P50}, {X: 90, Y: l.P90}, {X: 99, Y: l.P99}, {X: 99.9, Y: l.P999}} {
					if q.Y > 0 {
						pts = append(pts, q)
					}
				}
				name += " (summary percentiles)"
				summaryOnly = true
			}
			line := svgchart.LineSeries{Name: name, Color: colorFor(g.Target, seen), Dashed: g.Tool != results.PrimaryTool, Points: pts}
			if tools := groupsTools(b); len(tools) > 1 {
				// Several tools on the same targets: colour tells the tools apart, dashes the targets.
				line.Color = svgchart.Palette[index(tools, g.Tool)%len(svgchart.Palette)]
				line.Dashed = index(groupsTargets(b), g.Target) > 0
			}
			c.Series = append(c.Series, line)
		}
		if len(c.Series) == 0 {
			continue
		}
		caption := v + ": the repeat with the median throughput per target; log axes, each nine of the percentile gets equal width"
		if summaryOnly {
			caption += "; tools without a full spectrum are drawn from their p50, p90, p99 and p99.9"
		}
		c.Width, c.Height = 460, 260
		out = append(out, figure{Caption: caption, SVG: template.HTML(c.SVG())})
	}
	return out
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

// timelines draws, per variant, every run's per-second throughput and p99, so stalls and
// warm-up drift show; runs whose tool recorded no per-second figures are listed instead.
func timelines(f *Folder, b *baseStep) ([]figure, []string) {
	var variants []string
	for _, g := range b.groups {
		variants = appendNew(variants, g.Step)
	}
	var out []figure
	var missing []string
	seen := map[string]int{}
	for _, v := range variants {
		xAxis := svgchart.Axis{Label: "seconds into the measured window (warm-up up to 0)"}
		rps := svgchart.Lines{Title: v + ": throughput per second", X: xAxis, Y: svgchart.Axis{Label: "req/s"}, Width: 460, Height: 240}
		p99 := svgchart.Lines{Title: v + ": p99 per second", X: xAxis, Y: svgchart.Axis{Label: "p99 ms"}, Width: 460, Height: 240}
		var p99s []float64
		for _, g := range b.groups {
			if g.Step != v {
				continue
			}
			for n, i := range runsOf(f, g) {
				r := f.Records[i]
				name := fmt.Sprintf("%s r%d", r.Target, r.Repeat)
				if len(groupsTools(b)) > 1 {
					name = fmt.Sprintf("%s %s r%d", r.Target, r.Tool, r.Repeat)
				}
				secs := f.PerRun[i].Seconds
				if len(secs) == 0 {
					missing = append(missing, fmt.Sprintf("%s, %s, %s, repeat %d: no per-second data for this run", r.Step, r.Target, r.Tool, r.Repeat))
					continue
				}
				a := svgchart.LineSeries{Name: name, Color: colorFor(r.Target, seen), Dashed: n%2 == 1}
				l := a
				for _, s := range secs {
					a.Points = append(a.Points, svgchart.Point{X: s.T, Y: s.ThroughputRPS})
					if s.P99Ms > 0 {
						l.Points = append(l.Points, svgchart.Point{X: s.T, Y: s.P99Ms})
						p99s = append(p99s, s.P99Ms)
					}
				}
				rps.Series = append(rps.Series, a)
				p99.Series = append(p99.Series, l)
			}
		}
		if len(rps.Series) == 0 {
			continue
		}
		p99.Y.Log = spread(p99s) >= 20
		out = append(out, figure{Caption: v + ": per second, one line per run", SVG: template.HTML(rps.SVG())},
			figure{Caption: v + ": p99 of each second, one line per run", SVG: template.HTML(p99.SVG())})
	}
	return out, missing
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

// publishedTable sets the article's figures beside ours with a verdict: whether the published
// value lies inside our interval of the median (its coverage printed), or which way it differs.
func publishedTable(f *Folder, p *page) {
	if f.Plan == nil || f.Plan.Scenario.Published == nil {
		return
	}
	pub := f.Plan.Scenario.Published
	p.PublishedTitle = pub.Title
	if p.PublishedTitle == "" {
		p.PublishedTitle = "The article"
	}
	p.PublishedHow = fmt.Sprintf("%s measured on: %s. Its method: %s.", p.PublishedTitle, pub.Hardware.Description, pub.Method)
	p.Differences = pub.Differences
	for _, r := range f.Summary.Published {
		fig := r.Figure
		row := publishedRow{Name: fig.Name, Measures: fig.Measures, Published: svgchart.FormatNumber(fig.Value) + " " + fig.Unit, Note: fig.Note, Ours: "—", Ratio: "—", Step: "—"}
		switch {
		case fig.Metric == "":
			row.Verdict = "not measured here"
		case r.Group == nil:
			row.Verdict = "not run"
		case fig.Metric == scenario.MetricThroughputGainPercent:
			// A gain compares two variants: ours and its interval come from the summary.
			row.Step = r.Group.Step + " (" + r.Group.Tool + ")"
			row.Verdict = "not run: nothing to divide by"
			if r.Versus != nil {
				row.Ours = results.GainText(r.Ours, r.CI)
				row.Step = r.Group.Step + " over " + r.Versus.Step + " (" + r.Group.Tool + ")"
				row.Verdict = judge(r.Ours, fig.Value, r.CI, "gain")
			}
		default:
			row.Ours = svgchart.FormatNumber(r.Ours) + " " + fig.Unit
			row.Ratio = svgchart.FormatNumber(r.Ratio) + "×"
			row.Step = r.Group.Step + " (" + r.Group.Tool + ")"
			row.Verdict = verdict(f, r)
		}
		p.Published = append(p.Published, row)
	}
}

func verdict(f *Folder, r results.FigureRow) string {
	fig := r.Figure
	var vals []float64
	for _, i := range runsOf(f, r.Group) {
		if v, ok := results.MetricValue(f.Records[i], fig.Metric); ok {
			vals = append(vals, fig.InUnit(v))
		}
	}
	return judge(r.Ours, fig.Value, stats.MedianCI(vals, results.CILevel), "median")
}

// judge says whether the published value lies inside our interval of what (the median, or a
// gain), or which way it differs.
func judge(ours, published float64, ci stats.Interval, what string) string {
	dir := "ours higher"
	if ours < published {
		dir = "ours lower"
	}
	switch {
	case math.IsNaN(ours):
		return "no value of ours"
	case ci.OK && ci.Contains(published):
		return "consistent: the published value is inside our interval of the " + what + " (" + ci.Label() + ")"
	case ci.OK:
		return dir + ": the published value is outside our interval of the " + what + " (" + ci.Label() + ")"
	}
	return dir + " (one repeat: no interval to judge by)"
}

func flagRows(f *Folder) []flagRow {
	where := map[string][]string{}
	for _, g := range f.Summary.Groups {
		for _, fc := range g.Flags {
			where[fc.Flag] = append(where[fc.Flag], fmt.Sprintf("%s %s %s ×%d", g.Step, g.Target, g.Tool, fc.Count))
		}
	}
	var out []flagRow
	known := map[string]bool{}
	for _, fl := range results.FlagLegend() {
		known[fl[0]] = true
		out = append(out, flagRow{Flag: fl[0], Meaning: fl[1], Raised: len(where[fl[0]]) > 0, Where: strings.Join(where[fl[0]], "; ")})
	}
	for fl, w := range where {
		if !known[fl] {
			out = append(out, flagRow{Flag: fl, Meaning: "(no legend)", Raised: true, Where: strings.Join(w, "; ")})
		}
	}
	return out
}
