package scenario

import (
	"errors"
	"fmt"
	"strings"
	"testing"
)

// gainScenario is a scenario whose figure (line 7) is the given flow mapping, with a step s
// that runs python-grpc over TLS and cleartext, reusing its connections or not.
func gainScenario(figure string) string {
	return "name: t\ndescription: d\npublished:\n  hardware: {description: h}\n  method: m\n  figures:\n" +
		"    - " + figure + "\n" +
		"steps:\n  - name: s\n    targets: [python-grpc]\n    method: Echo\n    connections: 10\n" +
		"    matrix:\n      tls: [true, false]\n      requests_per_connection: [1, 100, forever]\n"
}

const gainFigure = "{name: reuse, measures: m, value: 18, unit: \"%\", metric: throughput_gain_percent, step: s, target: python-grpc"

func TestGainFigureErrors(t *testing.T) {
	cases := []struct {
		name, figure, field, msg string
	}{
		{"versus missing", gainFigure + ", match: {requests_per_connection: forever}}",
			"published.figures[0].versus", "metric throughput_gain_percent needs versus"},
		{"versus on another metric",
			"{name: f, measures: m, value: 1, unit: req/s, metric: throughput_rps, step: s, target: python-grpc, versus: {requests_per_connection: 1}}",
			"published.figures[0].versus", "versus applies to metric throughput_gain_percent only (metric here: throughput_rps)"},
		{"versus on a cited figure", "{name: f, measures: m, value: 1, unit: \"%\", versus: {requests_per_connection: 1}}",
			"published.figures[0].versus", "versus applies to metric throughput_gain_percent only (metric here: none)"},
		{"unknown key in versus", gainFigure + ", match: {requests_per_connection: forever}, versus: {request_per_connection: 1}}",
			"published.figures[0].versus.request_per_connection", `unknown key "request_per_connection"`},
		{"bad requests_per_connection", gainFigure + ", match: {requests_per_connection: always}, versus: {requests_per_connection: 1}}",
			"published.figures[0].match.requests_per_connection", "expected requests per connection from 1 to 1000000, or forever"},
		{"versus picks nothing", gainFigure + ", match: {requests_per_connection: forever}, versus: {requests_per_connection: 10}}",
			"published.figures[0].versus", "step s has no variant with requests_per_connection=10 beside s-tls-perconnforever to divide by"},
		{"versus is the match", gainFigure + ", match: {requests_per_connection: 1}, versus: {requests_per_connection: 1}}",
			"published.figures[0].versus", "no variant with requests_per_connection=1 beside s-tls-perconn1"},
		{"no match: perconn1 over itself", gainFigure + ", versus: {requests_per_connection: 1}}",
			"published.figures[0].versus", "beside s-tls-perconn1 to divide by"},
		{"match picks nothing", gainFigure + ", match: {requests_per_connection: 5}, versus: {requests_per_connection: 1}}",
			"published.figures[0].match", "no variant of step s matches requests_per_connection=5"},
		{"gain in req/s", "{name: f, measures: m, value: 1, unit: req/s, metric: throughput_gain_percent, step: s, target: python-grpc, " +
			"match: {requests_per_connection: forever}, versus: {requests_per_connection: 1}}",
			"published.figures[0].unit", "unit req/s does not fit metric throughput_gain_percent"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			src := gainScenario(tc.figure)
			_, err := Parse("x.yaml", []byte(src))
			var es Errors
			if !errors.As(err, &es) {
				t.Fatalf("want Errors, got %v for:\n%s", err, src)
			}
			want := fmt.Sprintf("x.yaml:7: %s: ", tc.field)
			for _, e := range es {
				if s := e.Error(); strings.HasPrefix(s, want) && strings.Contains(s, tc.msg) {
					if len(es) != 1 {
						t.Errorf("want one error, got:\n%v", err)
					}
					return
				}
			}
			t.Errorf("want an error starting %q containing %q; got:\n%v", want, tc.msg, err)
		})
	}
}

// A gain figure pairs each variant its match picks with the variant that differs only in the
// versus values: over TLS with over TLS, cleartext with cleartext.
func TestGainFigureVersusVariant(t *testing.T) {
	sc, err := Parse("x.yaml", []byte(gainScenario(gainFigure+", match: {requests_per_connection: forever}, versus: {requests_per_connection: 1}}")))
	if err != nil {
		t.Fatal(err)
	}
	fig := sc.Published.Figures[0]
	if fig.Match["requests_per_connection"] != 0 || fig.Versus["requests_per_connection"] != 1 {
		t.Fatalf("match %v versus %v; want forever (0) and 1", fig.Match, fig.Versus)
	}
	st, _ := sc.Step("s")
	got := map[string]string{}
	for _, v := range st.Variants() {
		if !MatchVariant(fig.Match, v) {
			continue
		}
		w, ok := VersusVariant(v, fig.Versus)
		if !ok {
			t.Fatalf("%s: no variant to divide by", v.Name)
		}
		got[v.Name] = w.Name
	}
	want := map[string]string{"s-tls-perconnforever": "s-tls-perconn1", "s-clear-perconnforever": "s-clear-perconn1"}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("pairs %v, want %v", got, want)
	}
}
