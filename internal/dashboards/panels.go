package dashboards

import (
	"strings"

	"github.com/protobench/protobench/internal/stepinfo"
	"github.com/protobench/protobench/internal/tool"
)

// Grafana unit ids used by the panels.
const (
	unitReqPerSec  = "reqps"
	unitSeconds    = "s"
	unitBytes      = "bytes"
	unitBytesPerS  = "Bps"
	unitPacketsPS  = "pps"
	unitOpsPerSec  = "ops"
	unitFraction   = "percentunit"
	unitCount      = "short"
	unitCores      = "none"
	unitMicros     = "µs"
	rowHeight      = 1
	panelHeight    = 8
	gridColumns    = 24
	rateWindowExpr = "$__rate_interval"
	rangeExpr      = "$__range"
)

// Expect says for which steps a query must return data over the step's window: the end-to-end test
// runs every query over every record's window and fails where an expected one comes back empty.
type Expect int

// The expectations a query can carry.
const (
	// ExpectAlways: every step that measured something (step series, containers, host, server).
	ExpectAlways Expect = iota
	// ExpectLiveClient: steps measured by a tool whose /metrics Prometheus scrapes (our
	// generator's live client metrics).
	ExpectLiveClient
	// ExpectK6: steps measured by a tool that pushes its metrics by remote write (k6, whose
	// metric names the panels query).
	ExpectK6
	// ExpectServerCPU: steps whose record holds server CPU per request.
	ExpectServerCPU
	// ExpectMaybe: depends on the workload (message patterns, throttling): never required.
	ExpectMaybe
)

// Wants reports whether a query with this expectation must return data for a step measured by
// a tool whose live metrics reach Prometheus as live says (tool.Capabilities.LiveMetrics), and
// whose record has (or lacks) server CPU per request.
func (e Expect) Wants(live string, hasServerCPU bool) bool {
	switch e {
	case ExpectAlways:
		return true
	case ExpectLiveClient:
		return live == tool.LiveScrape
	case ExpectK6:
		return live == tool.LiveRemoteWrite
	case ExpectServerCPU:
		return hasServerCPU
	}
	return false
}

// Step labels, the dashboards' variables and the selectors built on them. Every series of a step
// carries these labels, directly (load generator, step series), as container_label_protobench_*
// (cAdvisor), or by a join with protobench_step_info (server and host series, which know nothing of
// steps). Grafana formats a multi-value variable inside a regex matcher as (a|b), so every
// variable sits in an =~ matcher.
var stepLabels = stepinfo.LabelNames

// stepLabelList is "run_id, scenario, step, repeat, target, tool" for by() and group_left().
var stepLabelList = strings.Join(stepLabels, ", ")

// matchers is label=~"$label" for each label, with an optional prefix on the label name.
func matchers(prefix string, labels ...string) string {
	var m []string
	for _, l := range labels {
		m = append(m, prefix+l+`=~"$`+l+`"`)
	}
	return strings.Join(m, ",")
}

var (
	// stepSelector selects the step series (protobench_step_*).
	stepSelector = matchers("", stepLabels...)
	// clientSelector selects the load generator's live series, which carry run_id, scenario,
	// step and target themselves; repeat and tool come from the join with stepInfo.
	clientSelector = matchers("", "run_id", "scenario", "step", "target")
	// containerSelector selects a step's containers in cAdvisor's series by their labels.
	containerSelector = matchers(containerLabelPrefix, stepLabels...)
	// stepInfo is one series per running step, valued 1, with exactly the step labels.
	stepInfo = "max by (" + stepLabelList + ") (" + stepinfo.InfoMetric + "{" + stepSelector + "})"
)

// containerLabelPrefix is how cAdvisor names a container label (protobench.step becomes
// container_label_protobench_step).
const containerLabelPrefix = "container_label_protobench_"

// containerRole selects a step's server or its load tool (the protobench.role label) on the
// chosen nodes.
func containerRole(role string) string {
	return containerSelector + "," + containerLabelPrefix + `role="` + role + `",` + nodeMatcher
}

// nodeMatcher keeps the series of the chosen swarm nodes. Under --engine swarm, Prometheus gives
// every cAdvisor, node-exporter and server series a node label (the node's hostname); under
// compose there is none. The variable's All value is ".*", which Grafana sends as it is, and
// node=~".*" also matches a series without the label (an absent label matches as ""), so compose
// series stay in every panel. A chosen node (or several, sent as (a|b)) matches only the series of
// those nodes; compose offers no node to choose.
const nodeMatcher = `node=~"$node"`

// nodeVariable lists the nodes that ran the chosen steps' containers (cAdvisor's series of them),
// so it follows the step variables like the panels do and is empty for a step that never ran.
func nodeVariable() Variable {
	return labelVariable("node", "Node", "container_cpu_usage_seconds_total", containerSelector, ".*")
}

// withStep joins a vector to the running step on `on` (empty: the one step running at the time),
// which filters it by the step variables and gives it the step's labels.
func withStep(expr, on string) string {
	return "(" + expr + ") * on (" + on + ") group_left (" + withoutLabels(stepLabels, on) + ") " + stepInfo
}

// withoutLabels is labels minus the comma-separated drop list, comma-joined.
func withoutLabels(labels []string, drop string) string {
	dropped := map[string]bool{}
	for _, d := range strings.Split(drop, ",") {
		dropped[strings.TrimSpace(d)] = true
	}
	var kept []string
	for _, l := range labels {
		if !dropped[l] {
			kept = append(kept, l)
		}
	}
	return strings.Join(kept, ", ")
}

func float(v float64) *float64 { return &v }

// timeseries is the shared panel default: a line chart pinned to the protobench datasource, with a
// table legend showing mean, max and last so a finished step can be read off without hovering.
// Targets get refIds A, B, C… in order.
func timeseries(title, description, unit string, targets ...Target) Panel {
	for i := range targets {
		targets[i].RefID = string(rune('A' + i))
		targets[i].Datasource = prometheus
		targets[i].EditorMode = "code"
		targets[i].Range = true
	}
	ds := prometheus
	return Panel{
		Datasource:  &ds,
		Description: description,
		FieldConfig: &FieldConfig{
			Defaults: FieldDefaults{
				Color: FieldColor{Mode: "palette-classic"},
				Custom: FieldCustom{
					AxisSoftMin: float(0),
					DrawStyle:   "line",
					FillOpacity: 10,
					LineWidth:   1,
					ShowPoints:  "never",
					Stacking:    Stacking{Group: "A", Mode: "none"},
					ScaleDistr:  ScaleDistro{Type: "linear"},
				},
				Unit: unit,
			},
			Overrides: []Override{},
		},
		Options: &Options{
			Legend:  Legend{Calcs: []string{"mean", "max", "lastNotNull"}, DisplayMode: "table", Placement: "bottom", ShowLegend: true},
			Tooltip: Tooltip{Mode: "multi", Sort: "desc"},
		},
		Targets: targets,
		Title:   title,
		Type:    "timeseries",
	}
}

// q is a query with its legend, expected to return data for every step.
func q(expr, legend string) Target { return Target{Expr: expr, LegendFormat: legend} }

// expecting sets the expectation of every query of p.
func expecting(e Expect, p Panel) Panel {
	for i := range p.Targets {
		p.Targets[i].expect = e
	}
	return p
}

// stacked makes a panel's series stack (for parts of a whole, such as CPU modes).
func stacked(p Panel) Panel {
	c := p.FieldConfig.Defaults.Custom.(FieldCustom)
	c.Stacking.Mode = "normal"
	c.FillOpacity = 40
	p.FieldConfig.Defaults.Custom = c
	return p
}

// rightAxis puts the series of one query on a right-hand axis with its own unit.
func rightAxis(p Panel, refID, unit string) Panel {
	p.FieldConfig.Overrides = append(p.FieldConfig.Overrides, Override{
		Matcher: Matcher{ID: "byFrameRefID", Options: refID},
		Properties: []Property{
			{ID: "unit", Value: unit},
			{ID: "custom.axisPlacement", Value: "right"},
		},
	})
	return p
}

// rate is rate(metric{selector}[$__rate_interval]). $__rate_interval is at least four scrape
// intervals (the datasource's timeInterval is the 1 s scrape), so a window always holds enough
// samples, and it widens when the dashboard is zoomed out so no sample falls between windows.
func rate(metric, selector string) string {
	return "rate(" + metric + "{" + selector + "}[" + rateWindowExpr + "])"
}

// byStep is "step, target" plus extra labels, the grouping every per-step panel keeps so that
// steps (and the targets within one) stay apart.
func byStep(extra string) string {
	if extra == "" {
		return "step, target"
	}
	return "step, target, " + extra
}
