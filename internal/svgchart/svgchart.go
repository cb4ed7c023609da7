// Package svgchart draws the few chart kinds the reports need (grouped bars with interval
// whiskers, and lines on linear or log axes) as small inline SVG, so a report is one file that
// opens anywhere without scripts, fonts or network. It was chosen over gonum.org/v1/plot on
// measured grounds: see ARCHITECTURE.md, "Why the charts are our own SVG".
package svgchart

import (
	"fmt"
	"html"
	"math"
	"sort"
	"strconv"
	"strings"
)

// Size of a chart in CSS pixels (the SVG scales down to narrow screens through its viewBox).
const (
	DefaultWidth  = 640
	DefaultHeight = 300
)

// Margins around the plot area, in pixels: room for tick labels, axis titles and the legend.
const (
	marginLeft   = 64
	marginRight  = 30
	marginTop    = 28
	marginBottom = 50
	legendRow    = 16
)

// Palette is the series colours, chosen to stay apart for colour-blind readers (Okabe–Ito).
var Palette = []string{"#0072B2", "#E69F00", "#009E73", "#CC79A7", "#56B4E9", "#D55E00", "#F0E442", "#000000"}

// Tick is one labelled position on an axis.
type Tick struct {
	Value float64
	Label string
}

// Axis describes one axis: its title, its scale, and optionally fixed ticks.
type Axis struct {
	Label string
	Log   bool   // log10 scale; values ≤ 0 are left out
	Ticks []Tick // when set, these replace the automatic ticks
	// Min and Max fix the range when both are set (Max > Min); otherwise it follows the data,
	// and a linear value axis always includes zero.
	Min, Max float64
	// Transform maps a value before it is scaled (e.g. percentile to 1/(1-p) for a tail plot);
	// ticks are given in untransformed values.
	Transform func(float64) float64
}

// BarSeries is one bar per category; NaN leaves a gap. Lo and Hi, when set, are a whisker (an
// interval) per category; NaN there leaves the bar without one.
type BarSeries struct {
	Name  string
	Color string // empty: the palette's colour for the series' position
	// Colors, when set, colour each category's bar on its own (e.g. by target, so that a
	// target keeps its colour across charts); Color still marks the series in the legend.
	Colors []string
	Values []float64
	Lo, Hi []float64
}

// Bars is a grouped bar chart: one group per category, one bar per series in each group.
type Bars struct {
	Title      string
	Categories []string
	Series     []BarSeries
	Y          Axis
	Width      int
	Height     int
}

// Point is one (x, y) of a line.
type Point struct{ X, Y float64 }

// LineSeries is one line; points are drawn in X order.
type LineSeries struct {
	Name   string
	Color  string
	Dashed bool
	Points []Point
}

// Lines is a line chart.
type Lines struct {
	Title  string
	Series []LineSeries
	X, Y   Axis
	Width  int
	Height int
}

// scale maps data values to pixels along one axis.
type scale struct {
	lo, hi   float64 // transformed data range
	p0, p1   float64 // pixel range
	log      bool
	transfor func(float64) float64
}

func (s scale) valid(v float64) bool {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return false
	}
	if s.transfor != nil {
		v = s.transfor(v)
	}
	return !(s.log && v <= 0) && !math.IsNaN(v) && !math.IsInf(v, 0)
}

func (s scale) t(v float64) float64 {
	if s.transfor != nil {
		v = s.transfor(v)
	}
	if s.log {
		return math.Log10(v)
	}
	return v
}

func (s scale) px(v float64) float64 {
	tv := s.t(v)
	if s.hi == s.lo {
		return (s.p0 + s.p1) / 2
	}
	return s.p0 + (tv-s.lo)/(s.hi-s.lo)*(s.p1-s.p0)
}

// newScale fits an axis to the values it must show.
func newScale(a Axis, values []float64, p0, p1 float64, includeZero bool) scale {
	s := scale{p0: p0, p1: p1, log: a.Log, transfor: a.Transform}
	if a.Max > a.Min {
		s.lo, s.hi = s.t(a.Min), s.t(a.Max)
		return s
	}
	lo, hi := math.Inf(1), math.Inf(-1)
	for _, v := range values {
		if !s.valid(v) {
			continue
		}
		tv := s.t(v)
		lo, hi = math.Min(lo, tv), math.Max(hi, tv)
	}
	for _, t := range a.Ticks {
		if s.valid(t.Value) {
			tv := s.t(t.Value)
			lo, hi = math.Min(lo, tv), math.Max(hi, tv)
		}
	}
	if math.IsInf(lo, 1) {
		lo, hi = 0, 1
		if s.log {
			lo, hi = 0, 1 // 1 to 10
		}
	}
	if s.log {
		// Whole decades read best on a log axis.
		lo, hi = math.Floor(lo), math.Ceil(hi)
		if hi == lo {
			hi = lo + 1
		}
		s.lo, s.hi = lo, hi
		return s
	}
	if includeZero {
		lo, hi = math.Min(lo, 0), math.Max(hi, 0)
	}
	if hi == lo {
		hi = lo + math.Max(1, math.Abs(lo)*0.1)
	}
	step := niceStep((hi - lo) / 5)
	s.lo = math.Floor(lo/step) * step
	s.hi = math.Ceil(hi/step) * step
	return s
}

// niceStep rounds a raw tick step to 1, 2 or 5 times a power of ten.
func niceStep(raw float64) float64 {
	if raw <= 0 || math.IsNaN(raw) || math.IsInf(raw, 0) {
		return 1
	}
	p := math.Pow(10, math.Floor(math.Log10(raw)))
	switch f := raw / p; {
	case f <= 1:
		return p
	case f <= 2:
		return 2 * p
	case f <= 5:
		return 5 * p
	}
	return 10 * p
}

// ticks are the labelled positions of a scale: the axis's own, or round numbers.
func (s scale) ticks(a Axis) []Tick {
	if len(a.Ticks) > 0 {
		var out []Tick
		for _, t := range a.Ticks {
			if s.valid(t.Value) {
				out = append(out, t)
			}
		}
		return out
	}
	var out []Tick
	if s.log {
		for e := s.lo; e <= s.hi+1e-9; e++ {
			v := math.Pow(10, e)
			out = append(out, Tick{v, FormatNumber(v)})
		}
		return out
	}
	step := niceStep((s.hi - s.lo) / 5)
	for v := s.lo; v <= s.hi+step*1e-6; v += step {
		r := math.Round(v/step) * step
		out = append(out, Tick{r, FormatNumber(r)})
	}
	return out
}

// FormatNumber prints an axis or tooltip number compactly: 12k, 1.5M, 0.25, 3.
func FormatNumber(v float64) string {
	a := math.Abs(v)
	switch {
	case math.IsNaN(v) || math.IsInf(v, 0):
		return "n/a"
	case a >= 1e9:
		return trim(v/1e9) + "G"
	case a >= 1e6:
		return trim(v/1e6) + "M"
	case a >= 1e4:
		return trim(v/1e3) + "k"
	case a == 0:
		return "0"
	}
	return trim(v)
}

// trim prints three significant digits without trailing zeros.
func trim(v float64) string {
	if v == 0 {
		return "0"
	}
	digits := 2 - int(math.Floor(math.Log10(math.Abs(v))))
	s := strconv.FormatFloat(v, 'f', max(digits, 0), 64)
	if strings.Contains(s, ".") {
		s = strings.TrimRight(strings.TrimRight(s, "0"), ".")
	}
	return s
}

func colorOf(c string, i int) string {
	if c != "" {
		return c
	}
	return Palette[i%len(Palette)]
}

func size(w, h int) (int, int) {
	if w <= 0 {
		w = DefaultWidth
	}
	if h <= 0 {
		h = DefaultHeight
	}
	return w, h
}

// svgWriter accumulates elements; numbers print with one decimal, which is below a pixel.
type svgWriter struct{ b strings.Builder }

func (w *svgWriter) f(format string, args ...any) { fmt.Fprintf(&w.b, format, args...) }

func esc(s string) string { return html.EscapeString(s) }

func num(v float64) string { return strconv.FormatFloat(v, 'f', 1, 64) }

func (w *svgWriter) open(width, height int, title string) {
	w.f(`<svg xmlns="http://www.w3.org/2000/svg" class="chart" width="%d" height="%d" viewBox="0 0 %d %d" role="img" aria-label="%s">`,
		width, height, width, height, esc(title))
	w.f(`<title>%s</title>`, esc(title))
	w.f(`<rect width="%d" height="%d" fill="#fff"/>`, width, height)
	if title != "" {
		w.f(`<text x="%d" y="17" class="t">%s</text>`, marginLeft, esc(title))
	}
}

// yAxis draws horizontal grid lines with labels and the axis title.
func (w *svgWriter) yAxis(s scale, a Axis, x0, x1 float64) {
	for _, t := range s.ticks(a) {
		y := s.px(t.Value)
		w.f(`<line x1="%s" y1="%s" x2="%s" y2="%s" class="g"/>`, num(x0), num(y), num(x1), num(y))
		w.f(`<text x="%s" y="%s" class="yl">%s</text>`, num(x0-5), num(y+4), esc(t.Label))
	}
	if a.Label != "" {
		cy := (s.p0 + s.p1) / 2
		w.f(`<text transform="translate(14 %s) rotate(-90)" class="at">%s</text>`, num(cy), esc(a.Label))
	}
}

// legend draws one swatch per series in rows under the x axis title.
func (w *svgWriter) legend(names, colors []string, dashed []bool, width, y int) {
	x := float64(marginLeft)
	for i, n := range names {
		item := 22 + 7*float64(len([]rune(n))) + 14
		if x+item > float64(width-marginRight) && x > marginLeft {
			x = marginLeft
			y += legendRow
		}
		dash := ""
		if dashed != nil && dashed[i] {
			dash = ` stroke-dasharray="5 3"`
		}
		w.f(`<line x1="%s" y1="%d" x2="%s" y2="%d" stroke="%s" stroke-width="3"%s/>`, num(x), y-4, num(x+16), y-4, colors[i], dash)
		w.f(`<text x="%s" y="%d" class="lg">%s</text>`, num(x+20), y, esc(n))
		x += item
	}
}

// legendHeight is how many pixels the legend's rows need.
func legendHeight(names []string, width int) int {
	if len(names) == 0 {
		return 0
	}
	rows, x := 1, float64(marginLeft)
	for _, n := range names {
		item := 22 + 7*float64(len([]rune(n))) + 14
		if x+item > float64(width-marginRight) && x > marginLeft {
			rows++
			x = marginLeft
		}
		x += item
	}
	return rows * legendRow
}

// SVG renders the bar chart.
func (c Bars) SVG() string {
	width, height := size(c.Width, c.Height)
	names := make([]string, len(c.Series))
	colors := make([]string, len(c.Series))
	for i, s := range c.Series {
		names[i], colors[i] = s.Name, colorOf(s.Color, i)
	}
	lh := legendHeight(names, width)
	height += lh
	var vals []float64
	for _, s := range c.Series {
		vals = append(vals, s.Values...)
		vals = append(vals, s.Lo...)
		vals = append(vals, s.Hi...)
	}
	x0, x1 := float64(marginLeft), float64(width-marginRight)
	yb := float64(height - marginBottom - lh)
	ys := newScale(c.Y, vals, yb, marginTop, !c.Y.Log)
	var w svgWriter
	w.open(width, height, c.Title)
	w.yAxis(ys, c.Y, x0, x1)
	w.f(`<line x1="%s" y1="%s" x2="%s" y2="%s" class="ax"/>`, num(x0), num(yb), num(x1), num(yb))
	n := len(c.Categories)
	if n > 0 && len(c.Series) > 0 {
		group := (x1 - x0) / float64(n)
		bar := math.Min(48, group*0.8/float64(len(c.Series)))
		base := yb
		if !c.Y.Log {
			base = ys.px(math.Max(ys.lo, 0))
		}
		for gi, cat := range c.Categories {
			gx := x0 + group*float64(gi) + (group-bar*float64(len(c.Series)))/2
			w.f(`<text x="%s" y="%s" class="xl">%s</text>`, num(x0+group*(float64(gi)+0.5)), num(yb+15), esc(cat))
			for si, s := range c.Series {
				if gi >= len(s.Values) || !ys.valid(s.Values[gi]) {
					continue
				}
				v := s.Values[gi]
				bx := gx + bar*float64(si)
				top := ys.px(v)
				tip := fmt.Sprintf("%s, %s: %s", cat, s.Name, FormatNumber(v))
				lo, hi := at(s.Lo, gi), at(s.Hi, gi)
				if ys.valid(lo) && ys.valid(hi) {
					tip += fmt.Sprintf(" (interval %s–%s)", FormatNumber(lo), FormatNumber(hi))
				}
				fill := colors[si]
				if gi < len(s.Colors) && s.Colors[gi] != "" {
					fill = s.Colors[gi]
				}
				w.f(`<rect x="%s" y="%s" width="%s" height="%s" fill="%s"><title>%s</title></rect>`,
					num(bx+1), num(math.Min(top, base)), num(bar-2), num(math.Max(math.Abs(base-top), 0.5)), fill, esc(tip))
				if ys.valid(lo) && ys.valid(hi) {
					cx, pl, ph := bx+bar/2, ys.px(lo), ys.px(hi)
					cap := math.Min(8, bar/3)
					w.f(`<path d="M%s %sV%sM%s %sH%sM%s %sH%s" class="wh"/>`, num(cx), num(pl), num(ph),
						num(cx-cap), num(pl), num(cx+cap), num(cx-cap), num(ph), num(cx+cap))
				}
			}
		}
	}
	w.legend(names, colors, nil, width, int(yb)+marginBottom-2)
	w.f(`</svg>`)
	return w.b.String()
}

func at(xs []float64, i int) float64 {
	if i < len(xs) {
		return xs[i]
	}
	return math.NaN()
}

// SVG renders the line chart.
func (c Lines) SVG() string {
	width, height := size(c.Width, c.Height)
	names := make([]string, len(c.Series))
	colors := make([]string, len(c.Series))
	dashed := make([]bool, len(c.Series))
	for i, s := range c.Series {
		names[i], colors[i], dashed[i] = s.Name, colorOf(s.Color, i), s.Dashed
	}
	lh := legendHeight(names, width)
	height += lh
	var xv, yv []float64
	for _, s := range c.Series {
		for _, p := range s.Points {
			xv, yv = append(xv, p.X), append(yv, p.Y)
		}
	}
	x0, x1 := float64(marginLeft), float64(width-marginRight)
	yb := float64(height - marginBottom - lh)
	xs := newScale(c.X, xv, x0, x1, false)
	ys := newScale(c.Y, yv, yb, marginTop, !c.Y.Log)
	var w svgWriter
	w.open(width, height, c.Title)
	w.yAxis(ys, c.Y, x0, x1)
	w.f(`<line x1="%s" y1="%s" x2="%s" y2="%s" class="ax"/>`, num(x0), num(yb), num(x1), num(yb))
	for _, t := range xs.ticks(c.X) {
		x := xs.px(t.Value)
		w.f(`<line x1="%s" y1="%s" x2="%s" y2="%s" class="ax"/>`, num(x), num(yb), num(x), num(yb+4))
		w.f(`<text x="%s" y="%s" class="xl">%s</text>`, num(x), num(yb+15), esc(t.Label))
	}
	if c.X.Label != "" {
		w.f(`<text x="%s" y="%s" class="at" text-anchor="middle">%s</text>`, num((x0+x1)/2), num(yb+32), esc(c.X.Label))
	}
	for si, s := range c.Series {
		pts := append([]Point(nil), s.Points...)
		sort.SliceStable(pts, func(i, j int) bool { return pts[i].X < pts[j].X })
		var d strings.Builder
		var marks []Point
		for _, p := range pts {
			if !xs.valid(p.X) || !ys.valid(p.Y) {
				continue
			}
			cmd := "L"
			if d.Len() == 0 {
				cmd = "M"
			}
			d.WriteString(cmd + num(xs.px(p.X)) + " " + num(ys.px(p.Y)))
			marks = append(marks, p)
		}
		if d.Len() == 0 {
			continue
		}
		dash := ""
		if s.Dashed {
			dash = ` stroke-dasharray="5 3"`
		}
		w.f(`<path d="%s" fill="none" stroke="%s" stroke-width="2"%s/>`, d.String(), colors[si], dash)
		// Markers carry the exact values as tooltips; on a dense series they would only clutter.
		if len(marks) <= 40 {
			for _, p := range marks {
				w.f(`<circle cx="%s" cy="%s" r="3" fill="%s"><title>%s: %s, %s</title></circle>`,
					num(xs.px(p.X)), num(ys.px(p.Y)), colors[si], esc(s.Name), FormatNumber(p.X), FormatNumber(p.Y))
			}
		}
	}
	w.legend(names, colors, dashed, width, int(yb)+marginBottom-2)
	w.f(`</svg>`)
	return w.b.String()
}

// CSS is the style the charts' classes need; a page includes it once.
const CSS = `svg.chart{max-width:100%;height:auto;font:12px system-ui,sans-serif;display:block}
svg.chart .t{font-weight:600;font-size:13px}
svg.chart .g{stroke:#e3e3e3}
svg.chart .ax{stroke:#555}
svg.chart .yl{text-anchor:end;fill:#333}
svg.chart .xl{text-anchor:middle;fill:#333}
svg.chart .at{fill:#333;text-anchor:middle}
svg.chart .lg{fill:#222}
svg.chart .wh{stroke:#222;stroke-width:1.5;fill:none}`
