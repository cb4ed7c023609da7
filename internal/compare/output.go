package compare

import (
	"bytes"
	"fmt"
	"html/template"
	"io"
	"math"
	"path/filepath"
	"strings"

	"github.com/protobench/protobench/internal/hostspeed"
	"github.com/protobench/protobench/internal/report"
	"github.com/protobench/protobench/internal/stats"
	"github.com/protobench/protobench/internal/svgchart"
)

// File is the default name of the HTML comparison, written into the baseline folder.
const File = "compare.html"

// letter names folder i as the tables do: A is the baseline.
func letter(i int) string { return string(rune('A' + i)) }

func describe(f *report.Folder) string {
	h := f.Run.Host
	commit := h.GitCommit
	if len(commit) > 12 {
		commit = commit[:12]
	}
	if h.GitDirty {
		commit += "+dirty"
	}
	s := fmt.Sprintf("run %s, %s (%d cores), commit %s, started %s", f.Run.RunID, h.CPUModel, h.Cores, commit, f.Run.Started.UTC().Format("2006-01-02 15:04 UTC"))
	if f.Run.Quick {
		s += ", quick"
	}
	if f.Run.Finished == nil {
		s += ", interrupted"
	}
	return s + "; " + speedText(f)
}

// speedText is a folder's host speed index at the start and end of its run.
func speedText(f *report.Folder) string {
	hs := f.Run.HostSpeed
	if hs == nil || len(hs.Samples()) == 0 {
		return "host speed index not recorded"
	}
	var parts []string
	for _, role := range []struct {
		name string
		pick func(hostspeed.Sample) float64
	}{{"server cores", func(s hostspeed.Sample) float64 { return s.Server }}, {"tool cores", func(s hostspeed.Sample) float64 { return s.Client }}} {
		var vals []string
		for _, s := range hs.Samples() {
			vals = append(vals, fmt.Sprintf("%.1f", role.pick(s)))
		}
		parts = append(parts, role.name+" "+strings.Join(vals, " → "))
	}
	return "host speed index (start → end) " + strings.Join(parts, ", ")
}

// driftText says how far the host moved between the baseline and side i.
func (c *Comparison) driftText(i int) string {
	base := c.sideName(0)
	if !c.DriftKnown[i] {
		return fmt.Sprintf("%s vs %s: host drift unknown (a folder has no host speed index); a verdict may reflect the machine as well as the code", c.sideName(i), base)
	}
	noise := "its own noise was not measured (older folders)"
	if c.DriftNoise[i] > 0 {
		noise = fmt.Sprintf("its own noise (the spread of its tries) is up to %.1f %%, so ×%.3f counts", 100*c.DriftNoise[i], 1+c.beyondNoise(i))
	}
	return fmt.Sprintf("%s vs %s: the host's speed index moved by up to ×%.3f across the runs; %s, and changes within that factor either way get no verdict", c.sideName(i), base, 1+c.Drift[i], noise)
}

// method is the paragraph that says how the changes were judged, in both outputs.
func (c *Comparison) method() string {
	return fmt.Sprintf("A results folder is one state of the host, so one folder is one observation of it. With one folder a side there is no verdict: "+
		"each row says the smallest change two runs could show, from the between-run spread (%s). "+
		"With two or more folders a side, each change is the other side's geometric mean of the folders' geometric means over the baseline's, "+
		"with its 95 %% interval from a t on the log values of the folders (joined with that spread where it was measured). "+
		"The tested family is the throughput of closed-loop rows and the p99 of open-model rows (closed-loop p99 restates the throughput; "+
		"open-model throughput is the offered rate); open-model rows are compared only at the same offered rate. "+
		"Faster or slower means a Benjamini–Hochberg-adjusted p at or below %.2f across all %d tests (false discovery rate %.0f %%; for p99, lower is faster) "+
		"and a change beyond the host's drift. A change not found says the smallest change the row could find at %.0f %% power (its MDE, at level %.0f %%/%d); "+
		"it reads inconclusive when a change of %.0f %% would be found less often than that. docs/statistics.md. The req/s and p99 columns are medians.",
		c.Opts.Calibration.Source, FDR, c.Tests, 100*FDR, 100*c.Opts.Power, 100*FDR, max(1, c.Tests), 100*(c.Opts.Effect-1))
}

func pct(c Change) string {
	p := c.Percent()
	if math.IsNaN(p) {
		return "n/a"
	}
	s := fmt.Sprintf("%+.1f %%", p)
	if c.CI.OK {
		s += fmt.Sprintf(" (%+.1f to %+.1f; %s)", 100*(c.CI.Lo-1), 100*(c.CI.Hi-1), c.CI.Label())
	}
	return s
}

func adjP(c Change) string {
	if math.IsNaN(c.Adjusted) {
		return "—"
	}
	if c.Adjusted < 0.001 {
		return "<0.001"
	}
	return fmt.Sprintf("%.3f", c.Adjusted)
}

func nText(r Row) string {
	if r.Base.Folders > 1 || r.Other.Folders > 1 {
		return fmt.Sprintf("%d / %d folders (%d / %d repeats)", r.Base.Folders, r.Other.Folders, r.Base.Repeats, r.Other.Repeats)
	}
	return fmt.Sprintf("%d / %d", r.Base.N, r.Other.N)
}

func verdictText(c Change) string {
	switch c.Verdict {
	case NoVerdict, NotTested:
		return c.Verdict + ": " + c.Why
	case NoDifference:
		return fmt.Sprintf("%s (could find ±%.1f %%)", c.Verdict, 100*(c.MDE-1))
	case Inconclusive:
		return fmt.Sprintf("%s: %s; could find only ±%.1f %%", c.Verdict, c.Why, 100*(c.MDE-1))
	}
	return c.Verdict
}

// Markdown writes the comparison as Markdown tables, one per step.
func (c *Comparison) Markdown(w io.Writer) error {
	var b bytes.Buffer
	fmt.Fprintf(&b, "# Comparison: %s\n\n", c.Folders[0].Run.Scenario)
	for i, f := range c.Folders {
		role := ""
		if i == 0 {
			role = " (baseline)"
		}
		fmt.Fprintf(&b, "- **%s**%s: `%s`: %s\n", letter(i), role, f.Dir, describe(f))
	}
	if c.Mismatch != "" {
		fmt.Fprintf(&b, "\n**Compared with --force although the scenarios differ:**\n\n%s", indentList(c.Mismatch))
	}
	if len(c.Warnings) > 0 {
		b.WriteString("\n**Warning: a folder ran on a busy host.**\n\n")
		for _, w := range c.Warnings {
			fmt.Fprintf(&b, "- %s\n", w)
		}
	}
	if len(c.Differences) > 0 {
		fmt.Fprintf(&b, "\n**Compared with --force although the settings differ** (a change may come from these):\n\n- %s\n", strings.Join(c.Differences, "\n- "))
	}
	b.WriteString("\n")
	for i := 1; i < len(c.Sides); i++ {
		fmt.Fprintf(&b, "- %s\n", c.driftText(i))
	}
	b.WriteString("\n" + c.method() + "\n\n")
	if len(c.Rows) == 0 {
		b.WriteString("No step, target and tool was measured in both folders.\n")
	}
	for _, step := range c.Steps() {
		fmt.Fprintf(&b, "## %s\n\n", step)
		b.WriteString("| Target | Tool | vs | n A / n | req/s A | req/s | change (interval) | adj. p | verdict | p99 ms A | p99 ms | change (interval) | adj. p | verdict |\n")
		b.WriteString("|---|---|---|---:|---:|---:|---:|---:|---|---:|---:|---:|---:|---|\n")
		for _, r := range c.Rows {
			if r.Step != step {
				continue
			}
			fmt.Fprintf(&b, "| %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |\n", r.Target, r.Tool, c.sideName(r.Folder), nText(r),
				svgchart.FormatNumber(r.Throughput.BaseMedian), svgchart.FormatNumber(r.Throughput.OtherMedian), pct(r.Throughput), adjP(r.Throughput), verdictText(r.Throughput),
				svgchart.FormatNumber(r.P99.BaseMedian), svgchart.FormatNumber(r.P99.OtherMedian), pct(r.P99), adjP(r.P99), verdictText(r.P99))
		}
		b.WriteString("\n")
	}
	counts := c.Counts()
	fmt.Fprintf(&b, "Verdicts over %d rows × 2 metrics: %d %s, %d %s, %d %s, %d %s, %d %s, %d %s.\n", len(c.Rows),
		counts[Faster], Faster, counts[Slower], Slower, counts[NoDifference], NoDifference, counts[Inconclusive], Inconclusive,
		counts[NoVerdict], NoVerdict, counts[NotTested], NotTested)
	_, err := w.Write(b.Bytes())
	return err
}

// Counts is how many changes got each verdict.
func (c *Comparison) Counts() map[string]int {
	out := map[string]int{}
	for _, r := range c.Rows {
		out[r.Throughput.Verdict]++
		out[r.P99.Verdict]++
	}
	return out
}

func indentList(s string) string {
	var out []string
	for _, l := range strings.Split(strings.TrimRight(s, "\n"), "\n") {
		out = append(out, "- "+strings.TrimSpace(l))
	}
	return strings.Join(out, "\n") + "\n"
}

func appendNew(xs []string, x string) []string {
	for _, y := range xs {
		if y == x {
			return xs
		}
	}
	return append(xs, x)
}

type htmlFolder struct {
	Letter, Dir, Desc, Link string
}

type htmlRow struct {
	Target, Tool, Vs, N                 string
	RPSAdj, P99Adj                      string
	BaseRPS, RPS, RPSChange, RPSVerdict string
	BaseP99, P99, P99Change, P99Verdict string
	RPSClass, P99Class                  string
}

type htmlStep struct {
	ID, Name string
	Charts   []template.HTML
	Rows     []htmlRow
}

type htmlPage struct {
	Title       string
	CSS         template.CSS
	Mismatch    string
	Warnings    []string
	Differences []string
	Drift       []string
	Method      string
	Folders     []htmlFolder
	Steps       []htmlStep
}

func class(v string) string {
	switch v {
	case Faster:
		return "better"
	case Slower:
		return "worse"
	}
	return ""
}

// HTML writes compare.html for a page at path out: per step, bars for each folder grouped by
// target with the exact interval of each median, and the table of changes. Links to the
// folders' reports are relative to out.
func (c *Comparison) HTML(w io.Writer, out string) error {
	p := htmlPage{Title: "protobench comparison: " + c.Folders[0].Run.Scenario, CSS: template.CSS(svgchart.CSS + "\n" + report.PageCSS + "\n.better{background:#e3f4ea}.worse{background:#fbe4e4}"), Mismatch: c.Mismatch, Differences: c.Differences, Method: c.method(), Warnings: c.Warnings}
	for i := 1; i < len(c.Sides); i++ {
		p.Drift = append(p.Drift, c.driftText(i))
	}
	for i, f := range c.Folders {
		link, err := filepath.Rel(filepath.Dir(out), filepath.Join(f.Dir, report.File))
		if err != nil {
			link = ""
		}
		p.Folders = append(p.Folders, htmlFolder{Letter: letter(i), Dir: f.Dir, Desc: describe(f), Link: filepath.ToSlash(link)})
	}
	for _, step := range c.Steps() {
		s := htmlStep{ID: report.StepID(step), Name: step}
		var targets, tools []string
		for _, r := range c.Rows {
			if r.Step == step {
				tools = appendNew(tools, r.Tool)
			}
		}
		for _, r := range c.Rows {
			if r.Step != step {
				continue
			}
			targets = appendNew(targets, groupName(r, len(tools) > 1))
			s.Rows = append(s.Rows, htmlRow{
				Target: r.Target, Tool: r.Tool, Vs: c.sideName(r.Folder), N: nText(r), RPSAdj: adjP(r.Throughput), P99Adj: adjP(r.P99),
				BaseRPS: svgchart.FormatNumber(r.Throughput.BaseMedian), RPS: svgchart.FormatNumber(r.Throughput.OtherMedian),
				RPSChange: pct(r.Throughput), RPSVerdict: verdictText(r.Throughput), RPSClass: class(r.Throughput.Verdict),
				BaseP99: svgchart.FormatNumber(r.P99.BaseMedian), P99: svgchart.FormatNumber(r.P99.OtherMedian),
				P99Change: pct(r.P99), P99Verdict: verdictText(r.P99), P99Class: class(r.P99.Verdict),
			})
		}
		s.Charts = c.stepCharts(step, targets, len(tools) > 1)
		p.Steps = append(p.Steps, s)
	}
	return compareTemplate.Execute(w, p)
}

// groupName labels a row's bar group: the target, and the tool when the step has several.
func groupName(r Row, withTool bool) string {
	if withTool {
		return r.Target + " " + r.Tool
	}
	return r.Target
}

// stepCharts draws one bar per folder in each target's group, from the samples the verdicts
// used, so the whiskers are the intervals the verdicts compare.
func (c *Comparison) stepCharts(step string, groups []string, withTool bool) []template.HTML {
	mk := func(title, unit string, pick func(Figures) []float64) template.HTML {
		ch := svgchart.Bars{Title: step + ": " + title, Categories: groups, Y: svgchart.Axis{Label: unit},
			Width: max(svgchart.DefaultWidth, 30*len(groups)*len(c.Folders)+120)}
		for fi := range c.Sides {
			s := svgchart.BarSeries{Name: c.sideName(fi)}
			for _, gname := range groups {
				v, lo, hi := math.NaN(), math.NaN(), math.NaN()
				for _, r := range c.Rows {
					if r.Step != step || groupName(r, withTool) != gname {
						continue
					}
					var fig Figures
					switch {
					case fi == 0:
						fig = r.Base
					case r.Folder == fi:
						fig = r.Other
					default:
						continue
					}
					sum := stats.Summarize(pick(fig))
					if sum.N > 0 {
						v = sum.Median
					}
					if sum.CI.OK {
						lo, hi = sum.CI.Lo, sum.CI.Hi
					}
				}
				s.Values, s.Lo, s.Hi = append(s.Values, v), append(s.Lo, lo), append(s.Hi, hi)
			}
			ch.Series = append(ch.Series, s)
		}
		return template.HTML(ch.SVG())
	}
	return []template.HTML{
		mk("throughput", "req/s", func(f Figures) []float64 { return f.Throughput }),
		mk("p99 latency", "p99 ms", func(f Figures) []float64 { return f.P99 }),
	}
}

var compareTemplate = template.Must(template.New("compare").Parse(`<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>{{.Title}}</title>
<style>{{.CSS}}</style>
</head><body>
<h1>{{.Title}}</h1>
<table><tr><th></th><th>Folder</th><th>Run</th></tr>
{{range .Folders}}<tr><th>{{.Letter}}</th><td>{{if .Link}}<a href="{{.Link}}">{{.Dir}}</a>{{else}}{{.Dir}}{{end}}</td><td>{{.Desc}}</td></tr>
{{end}}</table>
{{with .Mismatch}}<p class="status">Compared with --force although the scenarios differ:<br>{{.}}</p>{{end}}
{{range .Warnings}}<p class="status">Warning: {{.}}</p>{{end}}
{{if .Differences}}<div class="status">Compared with --force although the settings differ (a change may come from these):<ul>{{range .Differences}}<li>{{.}}</li>{{end}}</ul></div>{{end}}
<ul>{{range .Drift}}<li>{{.}}</li>{{end}}</ul>
<p>{{.Method}} Bars are medians; whiskers are the exact order-statistic interval of each median, whose coverage depends on n (75 % at n=3, 93.8 % at n=5).</p>
{{range .Steps}}<section id="{{.ID}}"><h2>{{.Name}}</h2>
<div class="grid">{{range .Charts}}<figure>{{.}}</figure>{{end}}</div>
<table><tr><th>Target</th><th>Tool</th><th>vs</th><th>n A / n</th><th>req/s A</th><th>req/s</th><th>change (interval)</th><th>adj. p</th><th>verdict</th><th>p99 ms A</th><th>p99 ms</th><th>change (interval)</th><th>adj. p</th><th>verdict</th></tr>
{{range .Rows}}<tr><td>{{.Target}}</td><td>{{.Tool}}</td><td>{{.Vs}}</td><td class="n">{{.N}}</td><td class="n">{{.BaseRPS}}</td><td class="n">{{.RPS}}</td><td class="n">{{.RPSChange}}</td><td class="n">{{.RPSAdj}}</td><td class="{{.RPSClass}}">{{.RPSVerdict}}</td><td class="n">{{.BaseP99}}</td><td class="n">{{.P99}}</td><td class="n">{{.P99Change}}</td><td class="n">{{.P99Adj}}</td><td class="{{.P99Class}}">{{.P99Verdict}}</td></tr>
{{end}}</table></section>
{{else}}<p>No step, target and tool was measured in both folders.</p>{{end}}
</body></html>
`))
