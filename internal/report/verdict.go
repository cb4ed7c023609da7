package report

import (
	"fmt"

	"github.com/protobench/protobench/internal/results"
	"github.com/protobench/protobench/internal/scenario"
	"github.com/protobench/protobench/internal/svgchart"
)

type publishedRow struct {
	Name, Measures, Published, Ours, Ratio, Step, Verdict, Note string
}

// publishedTable sets the article's figures beside ours with a verdict: whether the published
// value lies inside our interval of the median or gain (its label printed), or which way it
// differs; or, where that interval covers less than 95 %, that there is no verdict
// (results.Judge).
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
				row.Verdict = r.VerdictText()
			}
		default:
			row.Ours = svgchart.FormatNumber(r.Ours) + " " + fig.Unit
			row.Ratio = svgchart.FormatNumber(r.Ratio) + "×"
			row.Step = r.Group.Step + " (" + r.Group.Tool + ")"
			row.Verdict = r.VerdictText()
		}
		p.Published = append(p.Published, row)
	}
}
