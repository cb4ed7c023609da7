package report

import (
	"fmt"
	"html/template"

	"github.com/protobench/protobench/internal/svgchart"
)

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
