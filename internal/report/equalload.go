package report

import (
	"fmt"
	"html/template"
	"strings"

	"github.com/protobench/protobench/internal/equalload"
	"github.com/protobench/protobench/internal/results"
	"github.com/protobench/protobench/internal/svgchart"
)

// equalLoadSection is latency at equal load: the table and a chart per percentile.
type equalLoadSection struct {
	ID, Intro string
	Charts    []figure
	Rows      []equalLoadRow
	// Witnesses is the cross-check: a tool with an open model of its own at the same loads.
	WitnessIntro string
	Witnesses    []witnessRow
}

type witnessRow struct {
	Load, Offered, Target, Tool         string
	OursP50, ItsP50, OursP99, ItsP99, N string
	Verdict                             string
}

type equalLoadRow struct {
	Load, Offered, Target               string
	N                                   int
	Achieved, P50, P99, P999, CPU, Core string
	Incomplete                          int64
	Flags                               string
}

// equalLoad builds the section from the folder's equal-load runs; nil when it has none.
func equalLoad(f *Folder) *equalLoadSection {
	rows := equalload.Table(f.Records)
	if len(rows) == 0 {
		return nil
	}
	s := &equalLoadSection{ID: results.EqualLoadAnchor, Intro: results.EqualLoadIntro(rows)}
	num := func(v float64, n int) string {
		if n == 0 || v <= 0 {
			return "n/a"
		}
		return svgchart.FormatNumber(v)
	}
	for _, r := range rows {
		for _, c := range r.Cells {
			s.Rows = append(s.Rows, equalLoadRow{
				Load: svgchart.FormatNumber(r.LoadPercent) + " %", Offered: num(r.Rate, 1), Target: c.Target, N: c.N,
				Achieved: num(c.AchievedRPS, c.N), P50: num(c.P50, c.N), P99: num(c.P99, c.N), P999: num(c.P999, c.N),
				CPU: num(c.CPUMicros, c.N), Core: num(c.CoreMicros, c.N), Incomplete: c.Incomplete, Flags: strings.Join(c.Flags, ", "),
			})
		}
	}
	for _, w := range equalload.Witnesses(f.Records) {
		verdict := w.Verdict
		if w.Why != "" {
			verdict += ": " + w.Why
		}
		s.Witnesses = append(s.Witnesses, witnessRow{
			Load: svgchart.FormatNumber(w.LoadPercent) + " %", Offered: num(w.Rate, 1), Target: w.Target, Tool: w.Tool,
			OursP50: num(w.Ours.P50, w.Ours.N), ItsP50: num(w.Theirs.P50, w.Theirs.N), OursP99: num(w.Ours.P99, w.Ours.N), ItsP99: num(w.Theirs.P99, w.Theirs.N),
			N: fmt.Sprintf("%d, %d", w.Ours.N, w.Theirs.N), Verdict: verdict,
		})
	}
	if len(s.Witnesses) > 0 {
		s.WitnessIntro = results.WitnessIntro()
	}
	seen := map[string]int{}
	for _, q := range []struct {
		name string
		get  func(equalload.Cell) float64
	}{
		{"p50", func(c equalload.Cell) float64 { return c.P50 }},
		{"p99", func(c equalload.Cell) float64 { return c.P99 }},
		{"p99.9", func(c equalload.Cell) float64 { return c.P999 }},
	} {
		chart := svgchart.Lines{
			Title: q.name + " latency at equal offered load (open model, from intended send)",
			X:     svgchart.Axis{Label: "offered load, % of the slower protocol's capacity"},
			Y:     svgchart.Axis{Label: q.name + " ms", Log: true},
			Width: 460, Height: 280,
		}
		var order []string
		pts := map[string][]svgchart.Point{}
		for _, r := range rows {
			for _, c := range r.Cells {
				if c.N == 0 || q.get(c) <= 0 {
					continue
				}
				if _, ok := pts[c.Target]; !ok {
					order = append(order, c.Target)
				}
				pts[c.Target] = append(pts[c.Target], svgchart.Point{X: r.LoadPercent, Y: q.get(c)})
			}
		}
		for _, t := range order {
			chart.Series = append(chart.Series, svgchart.LineSeries{Name: t, Color: colorFor(t, seen), Points: pts[t]})
		}
		if len(chart.Series) == 0 {
			continue
		}
		s.Charts = append(s.Charts, figure{
			Caption: fmt.Sprintf("%s latency, medians over repeats, each protocol at the same offered rate", q.name),
			SVG:     template.HTML(chart.SVG()),
		})
	}
	return s
}
