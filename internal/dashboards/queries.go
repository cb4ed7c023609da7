package dashboards

import (
	"regexp"
	"strconv"
	"strings"

	"github.com/protobench/protobench/internal/prom"
)

// RateInterval is what Queries puts in place of $__rate_interval: four 1 s scrapes plus one, which
// is what Grafana computes for a short time range with the datasource's 1 s timeInterval.
const RateInterval = "5s"

// DefaultRange is what Queries puts in place of $__range: the dashboards' default time range.
const DefaultRange = "15m"

// Values maps each Grafana variable the dashboards use to the concrete value Queries substitutes:
// every template variable takes its "All" value (as Grafana would send it), $__rate_interval
// takes RateInterval and $__range DefaultRange.
func Values() map[string]string {
	vals := map[string]string{"__rate_interval": RateInterval, "__range": DefaultRange}
	for _, d := range All() {
		for _, v := range d.Templating.List {
			vals[v.Name] = v.AllValue
		}
	}
	return vals
}

// StepValues are the variable values that select one step run, as Grafana would send them with
// exactly that step chosen: each value is a regex, so it is quoted; $__range is the step's window.
func StepValues(labels map[string]string, window float64) map[string]string {
	vals := Values()
	for k, v := range labels {
		vals[k] = regexp.QuoteMeta(v)
	}
	if window > 0 {
		vals["__range"] = strconv.Itoa(int(window+0.999)) + "s"
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

// Query is one dashboard expression with its variables substituted, and for which steps it must
// return data.
type Query struct {
	Name   string // "<uid> / <panel title> / <refId>", "<uid> / variable <name>", "<uid> / annotation <name>"
	Expr   string
	Expect Expect
}

// Queries returns every PromQL expression in the dashboards, panels, annotations and variables
// alike, with the variables substituted by Values. See QueriesWith.
func Queries() []prom.Query {
	var qs []prom.Query
	for _, q := range QueriesWith(Values()) {
		qs = append(qs, prom.Query{Name: q.Name, Expr: q.Expr})
	}
	return qs
}

// QueriesWith returns every PromQL expression in the dashboards with the variables substituted by
// vals. A variable's label_values(sel, label) becomes the equivalent PromQL, count by (label) (sel).
func QueriesWith(vals map[string]string) []Query {
	var qs []Query
	for _, d := range All() {
		for _, v := range d.Templating.List {
			expr := v.Query.Query
			if m := labelValuesCall.FindStringSubmatch(expr); m != nil {
				expr = "count by (" + m[2] + ") (" + m[1] + ")"
			}
			qs = append(qs, Query{Name: d.UID + " / variable " + v.Name, Expr: Substitute(expr, vals)})
		}
		for _, a := range d.Annotations.List {
			if a.Target != nil && a.Target.Expr != "" {
				qs = append(qs, Query{Name: d.UID + " / annotation " + a.Name, Expr: Substitute(a.Target.Expr, vals), Expect: a.Target.expect})
			}
		}
		for _, p := range flatten(d.Panels) {
			for _, t := range p.Targets {
				qs = append(qs, Query{
					Name:   d.UID + " / " + p.Title + " / " + t.RefID,
					Expr:   Substitute(t.Expr, vals),
					Expect: t.expect,
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
