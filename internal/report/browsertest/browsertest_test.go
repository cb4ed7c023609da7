package browsertest

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestOpenSeesFaults proves the checks can fail: each page breaks one rule the reports must keep.
func TestOpenSeesFaults(t *testing.T) {
	if Chromium() == "" {
		t.Skip("no Chromium installed")
	}
	chart := `<svg width="300" height="200"><rect width="300" height="200" fill="#0072B2"/></svg>`
	cases := []struct {
		name, body string
		problem    string // a substring of an expected problem; "" for none
		zeroSVG    bool
		blank      bool
		noData     bool
	}{
		{name: "good", body: chart},
		{name: "network", body: chart + `<img src="http://example.com/x.png">`, problem: "example.com"},
		{name: "console", body: chart + `<script>console.error("broken chart")</script>`, problem: "broken chart"},
		{name: "exception", body: chart + `<script>null.x</script>`, problem: "exception"},
		{name: "zero-svg", body: chart + `<svg width="0" height="0"></svg>`, zeroSVG: true},
		{name: "blank", body: `<svg width="300" height="200"></svg>`, blank: true, noData: true},
		{name: "axes-only", body: `<svg width="300" height="200"><path d="M20 10V180H290" stroke="#555" stroke-width="8" fill="none"/><text x="30" y="30" font-size="24">no data here</text></svg>`, noData: true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), c.name+".html")
			if err := os.WriteFile(path, []byte("<!DOCTYPE html><html><body style=\"margin:0\">"+c.body+"</body></html>"), 0o644); err != nil {
				t.Fatal(err)
			}
			res, err := Open(path, "browsertest-"+c.name)
			if err != nil {
				t.Fatal(err)
			}
			joined := strings.Join(res.Problems, "\n")
			switch {
			case c.problem == "" && len(res.Problems) > 0:
				t.Errorf("problems on a clean page: %s", joined)
			case c.problem != "" && !strings.Contains(joined, c.problem):
				t.Errorf("problems %q, want one mentioning %q", joined, c.problem)
			}
			zero := false
			for _, b := range res.SVGs {
				zero = zero || b.Width == 0 || b.Height == 0
			}
			if zero != c.zeroSVG {
				t.Errorf("zero-size svg seen = %v, want %v (%+v)", zero, c.zeroSVG, res.SVGs)
			}
			blank := false
			for _, b := range res.SVGs {
				blank = blank || (b.Width > 0 && b.Ink < MinInkFraction)
			}
			noData := false
			for _, b := range res.SVGs {
				noData = noData || (b.Width > 0 && b.Colour < MinColourFraction)
			}
			if noData != c.noData {
				t.Errorf("chart without data seen = %v (%+v), want %v", noData, res.SVGs, c.noData)
			}
			if blank != c.blank {
				t.Errorf("blank chart seen = %v (%+v), want %v", blank, res.SVGs, c.blank)
			}
		})
	}
}
