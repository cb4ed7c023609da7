package report

import (
	"html/template"

	"github.com/protobench/protobench/internal/results"
	"github.com/protobench/protobench/internal/svgchart"
)

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
