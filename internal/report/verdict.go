package report

import (
	"fmt"
	"math"

	"github.com/protobench/protobench/internal/results"
	"github.com/protobench/protobench/internal/scenario"
	"github.com/protobench/protobench/internal/stats"
	"github.com/protobench/protobench/internal/svgchart"
)

type publishedRow struct {
	Name, Measures, Published, Ours, Ratio, Step, Verdict, Note string
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
