package dashboards

import (
	"strings"

	"github.com/protobench/protobench/internal/stepinfo"
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
	// ExpectLiveClient: steps measured by protobench's own generator, the only tool with live
	// client metrics.
	ExpectLiveClient
	// ExpectK6: steps measured by k6, which writes its metrics by remote write.
	ExpectK6
	// ExpectServerCPU: steps whose record holds server CPU per request.
	ExpectServerCPU
	// ExpectMaybe: depends on the workload (message patterns, throttling): never required.
	ExpectMaybe
)

// Wants reports whether a query with this expectation must return data for a step measured by
// tool whose record has (or lacks) server CPU per request.
func (e Expect) Wants(tool string, hasServerCPU bool) bool {
	switch e {
	case ExpectAlways:
		return true
	case ExpectLiveClient:
		return tool == "protobench"
	case ExpectK6:
		return tool == "k6"
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

// --- Client (load generator live metrics) ---

// clientRate is the generator's request rate joined to its step, so repeat and tool filter it too.
func clientRate(by string) string {
	return "sum by (" + byStep(by) + ") (" + withStep(rate("protobench_client_requests_total", clientSelector), "run_id, scenario, step, target") + ")"
}

// clientQuantile is a latency quantile of the generator's histogram, per step and target.
func clientQuantile(phi, histogram, by string) string {
	return "histogram_quantile(" + phi + ", sum by (le, " + byStep(by) + ") (" +
		withStep(rate(histogram+"_bucket", clientSelector), "run_id, scenario, step, target") + "))"
}

func clientThroughputPanel() Panel {
	return expecting(ExpectLiveClient, timeseries("Client throughput",
		"Completed requests per second as the load generator counts them (all codes). Only the "+
			"protobench generator exports live metrics: steps measured by ghz, wrk or k6 show in the "+
			"step panels and, for k6, in its own panels.",
		unitReqPerSec,
		q(clientRate("method"), "{{step}} {{target}} {{method}}"),
	))
}

func clientCodesPanel() Panel {
	return expecting(ExpectLiveClient, timeseries("Client requests by code",
		"Requests per second by result code; anything but the protocol's OK code is an error.",
		unitReqPerSec,
		q(clientRate("code"), "{{step}} {{target}} {{code}}"),
	))
}

func clientLatencyPanel() Panel {
	return expecting(ExpectLiveClient, timeseries("Client latency (corrected) p50 / p99",
		"Latency from the intended send time, so time spent queued behind a slow response counts "+
			"(no coordinated omission). This is what a user would have seen.",
		unitSeconds,
		q(clientQuantile("0.5", "protobench_client_latency_seconds", "method"), "p50 {{step}} {{target}} {{method}}"),
		q(clientQuantile("0.99", "protobench_client_latency_seconds", "method"), "p99 {{step}} {{target}} {{method}}"),
	))
}

func clientServiceTimePanel() Panel {
	return expecting(ExpectLiveClient, timeseries("Client service time p50 / p99",
		"Latency from the actual send to the response. A gap to the corrected latency means requests "+
			"waited to be sent. The generator exports service time in the open model only; in the "+
			"closed model a request is sent when it is due, so this panel shows its latency.",
		unitSeconds,
		q(serviceTimeQuantile("0.5"), "p50 {{step}} {{target}} {{method}}"),
		q(serviceTimeQuantile("0.99"), "p99 {{step}} {{target}} {{method}}"),
	))
}

// serviceTimeQuantile is the service-time quantile of open-model steps and, through "or", the
// latency quantile of closed-model steps, which have no service-time series of their own: the
// two sides carry the same labels, so a step gets the left side when it has one.
func serviceTimeQuantile(phi string) string {
	return clientQuantile(phi, "protobench_client_service_time_seconds", "method") + " or " +
		clientQuantile(phi, "protobench_client_latency_seconds", "method")
}

func clientInflightPanel() Panel {
	return expecting(ExpectLiveClient, timeseries("Client requests in flight",
		"Requests sent and not yet answered.",
		unitCount,
		q("sum by ("+byStep("method")+") ("+withStep("protobench_client_inflight{"+clientSelector+"}", "run_id, scenario, step, target")+")", "{{step}} {{target}} {{method}}"),
	))
}

func clientSchedulerLagPanel() Panel {
	return expecting(ExpectLiveClient, timeseries("Client scheduler lag",
		"How far the open-model pacer is behind its schedule. A growing lag means the generator "+
			"cannot keep up and the step will be flagged rate-not-met.",
		unitSeconds,
		q("max by ("+byStep("method")+") ("+withStep("protobench_client_scheduler_lag_seconds{"+clientSelector+"}", "run_id, scenario, step, target")+")", "{{step}} {{target}} {{method}}"),
	))
}

// --- k6 (remote write) ---

// k6Selector selects k6's series. The k6 adapter tags them with run_id, step, target and tool, not
// scenario (k6 owns that tag for its own scenario name) nor repeat: the join with stepInfo adds
// both and filters by them.
var k6Selector = matchers("", "run_id", "step", "target", "tool")

// k6Series joins a k6 series to its step.
func k6Series(expr string) string { return withStep(expr, "run_id, step, target") }

func k6ThroughputPanel() Panel {
	return expecting(ExpectK6, timeseries("k6 iterations",
		"Iterations per second k6 completed (one request each in protobench's scripts), from k6's "+
			"Prometheus remote-write output, pushed five times a second.",
		unitReqPerSec,
		q("sum by ("+byStep("")+") ("+k6Series(rate("k6_iterations_total", k6Selector))+")", "{{step}} {{target}}"),
	))
}

// k6Quantile is a quantile of one of k6's trends, which k6 pushes as native histograms. The
// quantile comes before the join with stepInfo: the join multiplies, and Prometheus 2.42 does not
// multiply a histogram by a float.
func k6Quantile(phi, trend string) string {
	return "histogram_quantile(" + phi + ", sum by (run_id, step, target) (" + rate(trend, k6Selector) + "))"
}

func k6LatencyPanel() Panel {
	return expecting(ExpectK6, timeseries("k6 request duration p99",
		"k6's p99 request duration (HTTP and gRPC scripts) over the rate window, from the native "+
			"histograms k6 pushes.",
		unitSeconds,
		q("max by ("+byStep("")+") ("+k6Series(k6Quantile("0.99", "k6_http_req_duration_seconds")+" or "+
			k6Quantile("0.99", "k6_grpc_req_duration_seconds"))+")", "p99 {{step}} {{target}}"),
	))
}

// --- Server (server metrics) ---

// serverSeries joins a server series to its step. The servers know nothing of steps; Prometheus
// labels their series with target (the compose service), and a target runs one step at a time.
func serverSeries(expr string) string { return withStep(expr, "target") }

// serverSelector selects the chosen targets' server series on the chosen nodes.
const serverSelector = `target=~"$target",` + nodeMatcher

func serverRequestRatePanel() Panel {
	return timeseries("Server request rate",
		"Requests per second as the server counts them, by method and code.",
		unitReqPerSec,
		q("sum by ("+byStep("protocol, method, code")+") ("+serverSeries(rate("protobench_server_requests_total", serverSelector))+")", "{{step}} {{target}} {{method}} {{code}}"),
	)
}

func serverLatencyPanel() Panel {
	quantile := func(phi string) string {
		return "histogram_quantile(" + phi + ", sum by (le, " + byStep("protocol, method") + ") (" +
			serverSeries(rate("protobench_server_request_duration_seconds_bucket", serverSelector)) + "))"
	}
	return timeseries("Server handling time p50 / p99",
		"Time inside the server's handler: the part of the latency the protocol stack cannot blame "+
			"on the network or the client.",
		unitSeconds,
		q(quantile("0.5"), "p50 {{step}} {{target}} {{method}}"),
		q(quantile("0.99"), "p99 {{step}} {{target}} {{method}}"),
	)
}

func serverMessagesPanel() Panel {
	return expecting(ExpectMaybe, rightAxis(timeseries("Server messages",
		"Messages per second (left) and bytes per second (right) for message patterns such as "+
			"ZeroMQ PUSH/PULL and PUB/SUB.",
		unitOpsPerSec,
		q("sum by ("+byStep("protocol, pattern")+") ("+serverSeries(rate("protobench_server_messages_total", serverSelector))+")", "msg/s {{step}} {{target}} {{pattern}}"),
		q("sum by ("+byStep("protocol, pattern")+") ("+serverSeries(rate("protobench_server_message_bytes_total", serverSelector))+")", "bytes/s {{step}} {{target}} {{pattern}}"),
	), "B", unitBytesPerS))
}

// --- Containers (cAdvisor) ---

// containerBy keeps the step and target of a container series (cAdvisor's label names), and the
// swarm node: when a step's load is split over several client nodes, each part has its own cap,
// so CPU against the cap is per node (compose series have no node, and group as before).
var containerBy = containerLabelPrefix + "step, " + containerLabelPrefix + "target, node"

// containerLegend names a container series by its step, target and (swarm) node.
const containerLegend = "{{container_label_protobench_step}} {{container_label_protobench_target}} {{node}}"

// cpuCores is the CPU the selected containers used, in cores, per step and target.
func cpuCores(sel string) string {
	return "sum by (" + containerBy + ") (" + rate("container_cpu_usage_seconds_total", sel) + ")"
}

// cpuOfCap is the CPU used as a fraction of the container's CFS quota (the `cpus` cap).
func cpuOfCap(sel string) string {
	by := "max by (" + containerBy + ") "
	return cpuCores(sel) + " / on (" + containerBy + ") (" +
		by + "(container_spec_cpu_quota{" + sel + "}) / " +
		by + "(container_spec_cpu_period{" + sel + "}))"
}

func serverCPUPanel() Panel {
	sel := containerRole("server")
	return rightAxis(timeseries("Server container CPU",
		"CPU used by the server container in cores (left) and as a fraction of its cpus cap (right).",
		unitCores,
		q(cpuCores(sel), "cores "+containerLegend),
		q(cpuOfCap(sel), "of cap "+containerLegend),
	), "B", unitFraction)
}

func serverThrottlingPanel() Panel {
	sel := containerRole("server")
	sum := func(metric string) string {
		return "sum by (" + containerBy + ") (" + rate(metric, sel) + ")"
	}
	return rightAxis(timeseries("Server CPU throttling",
		"Share of CFS periods in which the server was throttled (left) and throttled seconds per "+
			"second (right). Any throttling means the server hit its cap and queued work.",
		unitFraction,
		q(sum("container_cpu_cfs_throttled_periods_total")+" / "+sum("container_cpu_cfs_periods_total"), "periods "+containerLegend),
		q(sum("container_cpu_cfs_throttled_seconds_total"), "seconds/s "+containerLegend),
	), "B", unitSeconds)
}

func serverMemoryPanel() Panel {
	return timeseries("Server memory working set",
		"The server container's working set, which is what the memory limit is enforced against.",
		unitBytes,
		q("max by ("+containerBy+") (container_memory_working_set_bytes{"+containerRole("server")+"})", containerLegend),
	)
}

func toolCPUPanel() Panel {
	sel := containerRole("tool")
	return rightAxis(timeseries("Load tool container CPU",
		"CPU of the load tool's container in cores (left) and as a fraction of its cap (right). "+
			"Near the cap, the step is client-bound and measures the tool, not the server.",
		unitCores,
		q(cpuCores(sel), "cores "+containerLegend),
		q(cpuOfCap(sel), "of cap "+containerLegend),
	), "B", unitFraction)
}

// --- Host (node-exporter) ---

// hostCPUPerCorePanel shows each core's busy share per node (several nodes each have a core 0);
// followSteps joins it to the running step (the overview), so the step variables filter it like
// every other panel there.
func hostCPUPerCorePanel(selector string, followSteps bool) Panel {
	expr := `sum by (node, cpu) (` + rate("node_cpu_seconds_total", joinSel(`mode!="idle"`, selector)) + `)`
	legend := "cpu {{cpu}} {{node}}"
	if followSteps {
		expr = withStep(expr, "")
		legend = "cpu {{cpu}} {{node}} {{step}} {{target}}"
	}
	p := timeseries("Host CPU busy per core",
		"Non-idle share of each core. Client and server sit on disjoint cpusets, so each should "+
			"light up its own cores.",
		unitFraction,
		q(expr, legend),
	)
	p.FieldConfig.Defaults.Max = float(1)
	return p
}

func hostCPUModesPanel() Panel {
	return stacked(timeseries("Host CPU by mode",
		"Cores spent in each mode, idle excluded. High softirq points at network processing, "+
			"high system at syscalls.",
		unitCores,
		q(`sum by (node, mode) (`+rate("node_cpu_seconds_total", joinSel(`mode!="idle"`, hostSelector))+`)`, "{{mode}} {{node}}"),
	))
}

func hostLoadPanel() Panel {
	return timeseries("Host load average",
		"Runnable and uninterruptible tasks; above the core count means work is waiting for a CPU.",
		unitCount,
		q("node_load1{"+hostSelector+"}", "load1 {{instance}}"),
		q("node_load5{"+hostSelector+"}", "load5 {{instance}}"),
		q("node_load15{"+hostSelector+"}", "load15 {{instance}}"),
	)
}

func hostMemoryPanel() Panel {
	return timeseries("Host memory",
		"Used (total minus available), available, and page cache plus buffers.",
		unitBytes,
		q("node_memory_MemTotal_bytes{"+hostSelector+"} - node_memory_MemAvailable_bytes{"+hostSelector+"}", "used {{instance}}"),
		q("node_memory_MemAvailable_bytes{"+hostSelector+"}", "available {{instance}}"),
		q("node_memory_Cached_bytes{"+hostSelector+"} + node_memory_Buffers_bytes{"+hostSelector+"}", "cache+buffers {{instance}}"),
	)
}

func hostNetworkBytesPanel() Panel {
	sel := joinSel(`device!="lo"`, hostSelector)
	return timeseries("Host network throughput",
		"Bytes per second per interface, loopback excluded.",
		unitBytesPerS,
		q("sum by (node, device) ("+rate("node_network_receive_bytes_total", sel)+")", "rx {{device}} {{node}}"),
		q("sum by (node, device) ("+rate("node_network_transmit_bytes_total", sel)+")", "tx {{device}} {{node}}"),
	)
}

func hostNetworkPacketsPanel() Panel {
	sel := joinSel(`device!="lo"`, hostSelector)
	return rightAxis(timeseries("Host network packets and drops",
		"Packets per second per interface (left) and dropped or errored packets (right).",
		unitPacketsPS,
		q("sum by (node, device) ("+rate("node_network_receive_packets_total", sel)+" + "+rate("node_network_transmit_packets_total", sel)+")", "packets {{device}} {{node}}"),
		q("sum by (node, device) ("+rate("node_network_receive_drop_total", sel)+" + "+rate("node_network_transmit_drop_total", sel)+
			" + "+rate("node_network_receive_errs_total", sel)+" + "+rate("node_network_transmit_errs_total", sel)+")", "drops+errors {{device}} {{node}}"),
	), "B", unitPacketsPS)
}

func hostContextSwitchesPanel() Panel {
	return timeseries("Host context switches and interrupts",
		"Per second. Context switches climb with the number of busy threads and connections.",
		unitOpsPerSec,
		q("sum by (instance) ("+rate("node_context_switches_total", hostSelector)+")", "context switches {{instance}}"),
		q("sum by (instance) ("+rate("node_intr_total", hostSelector)+")", "interrupts {{instance}}"),
	)
}

// joinSel joins label matchers, skipping empty ones.
func joinSel(matchers ...string) string {
	var kept []string
	for _, m := range matchers {
		if m != "" {
			kept = append(kept, m)
		}
	}
	return strings.Join(kept, ",")
}

// hostSelector selects the host dashboard's node-exporter instances on the chosen nodes.
const hostSelector = nodeMatcher + `,instance=~"$instance"`
