package dashboards

import (
	"regexp"
	"strings"

	"github.com/protobench/protobench/internal/promcheck"
)

// RateInterval is what Queries puts in place of $__rate_interval: four 1 s scrapes plus one, which
// is what Grafana computes for a short time range with the datasource's 1 s timeInterval.
const RateInterval = "5s"

// Values maps each Grafana variable the dashboards use to the concrete value Queries substitutes:
// every template variable takes its "All" value (as Grafana would send it) and $__rate_interval
// takes RateInterval.
func Values() map[string]string {
	vals := map[string]string{"__rate_interval": RateInterval}
	for _, d := range All() {
		for _, v := range d.Templating.List {
			vals[v.Name] = v.AllValue
		}
	}
	return vals
}

// variableRef matches $name and ${name}.
var variableRef = regexp.MustCompile(`\$(\{([A-Za-z0-9_]+)\}|([A-Za-z0-9_]+))`)

// Substitute replaces $name and ${name} in expr with vals[name]. Unknown variables stay as they are,
// so that a later check (or Prometheus' parser) notices them.
func Substitute(expr string, vals map[string]string) string {
	return variableRef.ReplaceAllStringFunc(expr, func(ref string) string {
		name := strings.Trim(ref, "${}")
		if v, ok := vals[name]; ok {
			return v
		}
		return ref
	})
}

// labelValuesCall matches a Grafana label_values(<series selector>, <label>) variable query.
var labelValuesCall = regexp.MustCompile(`^label_values\((.+),\s*([A-Za-z_][A-Za-z0-9_]*)\)$`)

// Queries returns every PromQL expression in the dashboards, panels and variables alike, with the
// variables substituted by Values. A variable's label_values(sel, label) becomes the equivalent
// PromQL, count by (label) (sel). Names are "<uid> / <panel title> / <refId>" for panel queries and
// "<uid> / variable <name>" for variables.
func Queries() []promcheck.Query {
	vals := Values()
	var qs []promcheck.Query
	for _, d := range All() {
		for _, v := range d.Templating.List {
			expr := v.Query.Query
			if m := labelValuesCall.FindStringSubmatch(expr); m != nil {
				expr = "count by (" + m[2] + ") (" + m[1] + ")"
			}
			qs = append(qs, promcheck.Query{Name: d.UID + " / variable " + v.Name, Expr: Substitute(expr, vals)})
		}
		for _, p := range flatten(d.Panels) {
			for _, t := range p.Targets {
				qs = append(qs, promcheck.Query{
					Name: d.UID + " / " + p.Title + " / " + t.RefID,
					Expr: Substitute(t.Expr, vals),
				})
			}
		}
	}
	return qs
}

// flatten lists panels with the panels of collapsed rows inlined.
func flatten(panels []Panel) []Panel {
	var out []Panel
	for _, p := range panels {
		out = append(out, p)
		if p.Panels != nil {
			out = append(out, flatten(*p.Panels)...)
		}
	}
	return out
}
