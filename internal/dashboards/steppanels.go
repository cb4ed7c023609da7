package dashboards

import (
	"github.com/protobench/protobench/internal/stepinfo"
)

// --- Steps (the runner's step series) ---

// stepAnnotation draws each step as a region: protobench_step_info is 1 while the step runs and
// ends with a staleness marker, so each of its series is one contiguous run of points.
func stepAnnotation() Annotation {
	no := false
	return Annotation{
		Datasource: prometheus,
		Enable:     true,
		IconColor:  "rgba(255, 176, 0, 0.35)",
		Name:       "Steps",
		Target: &Target{
			Datasource: prometheus, EditorMode: "code", Expr: stepInfo, Interval: "1s", Range: true, RefID: "Anno",
		},
		PrometheusAnnotationOptions: PrometheusAnnotationOptions{
			TagKeys:         "step,target,tool,repeat",
			TextFormat:      "run {{run_id}}, scenario {{scenario}}",
			TitleFormat:     "{{step}} · {{target}} · {{tool}} · repeat {{repeat}}",
			UseValueForTime: &no,
		},
	}
}

// stepFigure is the value of one step-summary series per step over the dashboard's range.
func stepFigure(metric string) string {
	return "max by (" + stepLabelList + ") (max_over_time(" + metric + "{" + stepSelector + "}[" + rangeExpr + "]))"
}

// stepSummaryPanel is one row per step (and repeat, target, tool) with the figures the runner
// recorded for it: the same numbers as results.json, on the dashboard.
func stepSummaryPanel() Panel {
	figures := []struct {
		metric, column string
		expect         Expect
	}{
		{stepinfo.RPSMetric, "req/s", ExpectAlways},
		{stepinfo.P99Metric, "p99 (s)", ExpectAlways},
		{stepinfo.CPUPerReqMetric, "server CPU µs/req", ExpectServerCPU},
		{stepinfo.ErrorsMetric, "errors", ExpectAlways},
	}
	var targets []Target
	rename := map[string]string{}
	for i, f := range figures {
		ref := string(rune('A' + i))
		targets = append(targets, Target{
			Datasource: prometheus, EditorMode: "code", Expr: stepFigure(f.metric), Format: "table",
			Instant: true, LegendFormat: "__auto", RefID: ref, expect: f.expect,
		})
		rename["Value #"+ref] = f.column
	}
	ds := prometheus
	return Panel{
		Datasource: &ds,
		Description: "One row per step run: throughput, p99 latency, server CPU per request and errors as the " +
			"runner recorded them (results.json), written to Prometheus at the end of each step. Filter with " +
			"the variables; the time range must include the step.",
		FieldConfig: &FieldConfig{
			Defaults: FieldDefaults{
				Color:  FieldColor{Mode: "thresholds"},
				Custom: TableCustom{Align: "auto", CellOptions: CellOptions{Type: "auto"}},
				Unit:   unitCount,
			},
			Overrides: []Override{
				{Matcher: Matcher{ID: "byName", Options: "req/s"}, Properties: []Property{{ID: "unit", Value: unitReqPerSec}}},
				{Matcher: Matcher{ID: "byName", Options: "p99 (s)"}, Properties: []Property{{ID: "unit", Value: unitSeconds}}},
				{Matcher: Matcher{ID: "byName", Options: "server CPU µs/req"}, Properties: []Property{{ID: "unit", Value: unitMicros}}},
			},
		},
		Options: &TableOptions{
			CellHeight: "sm",
			Footer:     TableFooter{Reducer: []string{"sum"}},
			ShowHeader: true,
			SortBy:     []TableSortByItem{},
		},
		Targets: targets,
		Title:   "Step summary",
		Transformations: []Transformation{
			{ID: "merge", Options: map[string]any{}},
			{ID: "organize", Options: map[string]any{
				"excludeByName": map[string]bool{"Time": true},
				"indexByName":   map[string]int{"run_id": 0, "scenario": 1, "step": 2, "repeat": 3, "target": 4, "tool": 5},
				"renameByName":  rename,
			}},
		},
		Type: "table",
	}
}

func stepTimelinePanel() Panel {
	return timeseries("Step throughput and p99",
		"The recorded req/s (left) and p99 (right) of each step, drawn over the step's measured window, so "+
			"steps measured by ghz, wrk or k6 appear beside the live load-generator panels.",
		unitReqPerSec,
		q("max by ("+stepLabelList+") ("+stepinfo.RPSMetric+"{"+stepSelector+"})", "req/s {{step}} {{target}} {{tool}} r{{repeat}}"),
		q("max by ("+stepLabelList+") ("+stepinfo.P99Metric+"{"+stepSelector+"})", "p99 {{step}} {{target}} {{tool}} r{{repeat}}"),
	)
}
