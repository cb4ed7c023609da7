package svgchart

import (
	"encoding/xml"
	"fmt"
	"io"
	"math"
	"strings"
	"testing"
)

// wellFormed decodes the whole SVG as XML, so a stray '<' or '&' in a label fails.
func wellFormed(t *testing.T, svg string) {
	t.Helper()
	d := xml.NewDecoder(strings.NewReader(svg))
	for {
		_, err := d.Token()
		if err == io.EOF {
			return
		}
		if err != nil {
			t.Fatalf("not well-formed XML: %v\n%s", err, svg)
		}
	}
}

func TestBars(t *testing.T) {
	nan := math.NaN()
	cases := []struct {
		name              string
		chart             Bars
		rects, whiskers   int
		mustHave, mustNot []string
	}{
		{
			name: "two groups with intervals",
			chart: Bars{Title: "a & <b>", Categories: []string{"grpc", "rest"}, Y: Axis{Label: "req/s"},
				Series: []BarSeries{{Name: "protobench", Values: []float64{100, 200}, Lo: []float64{90, 180}, Hi: []float64{110, 220}}}},
			rects: 2, whiskers: 2, mustHave: []string{"a &amp; &lt;b&gt;", "grpc, protobench: 100 (interval 90–110)"},
		},
		{
			name: "missing values leave gaps",
			chart: Bars{Categories: []string{"grpc", "rest"},
				Series: []BarSeries{{Name: "ghz", Values: []float64{nan, 5}, Lo: []float64{nan, nan}, Hi: []float64{nan, nan}}}},
			rects: 1, whiskers: 0, mustNot: []string{"NaN"},
		},
		{
			name: "bars coloured one by one",
			chart: Bars{Categories: []string{"grpc", "rest"},
				Series: []BarSeries{{Name: "protobench", Color: "#555", Colors: []string{"#123456", "#abcdef"}, Values: []float64{1, 2}}}},
			rects: 2, mustHave: []string{`fill="#123456"`, `fill="#abcdef"`, `stroke="#555"`},
		},
		{
			name:  "no data at all",
			chart: Bars{Categories: nil, Series: nil},
			rects: 0, whiskers: 0, mustNot: []string{"NaN", "Inf"},
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			svg := c.chart.SVG()
			wellFormed(t, svg)
			// One background rect per chart, then one per bar.
			if got := strings.Count(svg, "<rect") - 1; got != c.rects {
				t.Errorf("%d bars, want %d", got, c.rects)
			}
			if got := strings.Count(svg, `class="wh"`); got != c.whiskers {
				t.Errorf("%d whiskers, want %d", got, c.whiskers)
			}
			for _, s := range c.mustHave {
				if !strings.Contains(svg, s) {
					t.Errorf("lacks %q", s)
				}
			}
			for _, s := range c.mustNot {
				if strings.Contains(svg, s) {
					t.Errorf("holds %q", s)
				}
			}
		})
	}
}

func TestLinesLogAxesDropNonPositive(t *testing.T) {
	c := Lines{X: Axis{Log: true}, Y: Axis{Log: true}, Series: []LineSeries{{Name: "grpc",
		Points: []Point{{X: 0, Y: 1}, {X: 10, Y: 0}, {X: 10, Y: 2}, {X: 100, Y: 20}, {X: 1000, Y: 5}}}}}
	svg := c.SVG()
	wellFormed(t, svg)
	if got := strings.Count(svg, "<circle"); got != 3 {
		t.Errorf("%d points drawn, want 3 (x=0 and y=0 have no place on a log axis)", got)
	}
	for _, s := range []string{"NaN", "Inf"} {
		if strings.Contains(svg, s) {
			t.Errorf("holds %q", s)
		}
	}
	// Whole decades label a log axis: 10 to 1000 on x, 1 to 100 on y.
	for _, label := range []string{">10<", ">100<", ">1000<", ">1<"} {
		if !strings.Contains(svg, label) {
			t.Errorf("no tick %s", label)
		}
	}
}

func TestPointsStayInsideThePlot(t *testing.T) {
	c := Lines{Width: 400, Height: 200, Series: []LineSeries{{Name: "a", Points: []Point{{X: -5, Y: -3}, {X: 7, Y: 12345}, {X: 3, Y: 0.5}}}}}
	svg := c.SVG()
	d := xml.NewDecoder(strings.NewReader(svg))
	for {
		tok, err := d.Token()
		if err != nil {
			break
		}
		el, ok := tok.(xml.StartElement)
		if !ok || el.Name.Local != "circle" {
			continue
		}
		for _, a := range el.Attr {
			var v float64
			if a.Name.Local != "cx" && a.Name.Local != "cy" {
				continue
			}
			if _, err := fmt.Sscan(a.Value, &v); err != nil {
				t.Fatal(err)
			}
			if (a.Name.Local == "cx" && (v < marginLeft || v > 400-marginRight)) || (a.Name.Local == "cy" && (v < marginTop || v > 200)) {
				t.Errorf("%s=%v lies outside the plot area", a.Name.Local, v)
			}
		}
	}
}

func TestFormatNumber(t *testing.T) {
	cases := map[float64]string{0: "0", 3: "3", 0.25: "0.25", 12.345: "12.3", 9999: "9999", 12150: "12.2k", 1.5e6: "1.5M", -20000: "-20k", math.NaN(): "n/a"}
	for v, want := range cases {
		if got := FormatNumber(v); got != want {
			t.Errorf("FormatNumber(%v) = %q, want %q", v, got, want)
		}
	}
}
