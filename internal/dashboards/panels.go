package dashboards

import "strings"

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
	rowHeight      = 1
	panelHeight    = 8
	gridColumns    = 24
	rateWindowExpr = "$__rate_interval"
)

// Servers are the compose service names of the servers, which are also the values of the loadgen's
// target label. The target variable's "All" value is this list rather than ".*": the cAdvisor
// panels match containers by compose service, and ".*" would sweep Prometheus, Grafana and the load
// tools into the "server" CPU.
var Servers = []string{"grpc", "rest", "netrpc", "zeromq", "python-grpc"}

// LoadTools are the compose services the load tools run in; their CPU shows whether a step was
// client-bound.
var LoadTools = []string{"loadgen", "ghz", "wrk", "k6"}

// Label selectors shared by the panels. Grafana formats a multi-value variable inside a regex
// matcher as (a|b), so every variable sits in an =~ matcher.
const (
	clientSelector = `run_id=~"$run_id",scenario=~"$scenario",step=~"$step",target=~"$target"`
	// The compose Prometheus scrapes each server at <service>:9100, so the instance label carries
	// the compose service name, which is what $target holds.
	serverSelector = `instance=~"($target):.*"`
	serviceLabel   = "container_label_com_docker_compose_service"
	serverServices = serviceLabel + `=~"$target"`
	hostSelector   = `instance=~"$instance"`
)

// toolServices matches the load tools' containers.
var toolServices = serviceLabel + `=~"` + strings.Join(LoadTools, "|") + `"`

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

// q is a query with its legend.
func q(expr, legend string) Target { return Target{Expr: expr, LegendFormat: legend} }

// stacked makes a panel's series stack (for parts of a whole, such as CPU modes).
func stacked(p Panel) Panel {
	p.FieldConfig.Defaults.Custom.Stacking.Mode = "normal"
	p.FieldConfig.Defaults.Custom.FillOpacity = 40
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

// quantile is histogram_quantile over a classic histogram's buckets, kept per `by` labels.
func quantile(phi, histogram, selector, by string) string {
	return "histogram_quantile(" + phi + ", sum by (le, " + by + ") (" + rate(histogram+"_bucket", selector) + "))"
}

// --- Client (load generator live metrics) ---

func clientThroughputPanel() Panel {
	return timeseries("Client throughput",
		"Completed requests per second as the load generator counts them (all codes). Only the "+
			"protobench generator exports live metrics: steps measured by ghz, wrk or k6 leave the "+
			"client panels empty (their figures are in the results folder).",
		unitReqPerSec,
		q("sum by (target, method) ("+rate("protobench_client_requests_total", clientSelector)+")", "{{target}} {{method}}"),
	)
}

func clientCodesPanel() Panel {
	return timeseries("Client requests by code",
		"Requests per second by result code; anything but the protocol's OK code is an error.",
		unitReqPerSec,
		q("sum by (target, code) ("+rate("protobench_client_requests_total", clientSelector)+")", "{{target}} {{code}}"),
	)
}

func clientLatencyPanel() Panel {
	return timeseries("Client latency (corrected) p50 / p99",
		"Latency from the intended send time, so time spent queued behind a slow response counts "+
			"(no coordinated omission). This is what a user would have seen.",
		unitSeconds,
		q(quantile("0.5", "protobench_client_latency_seconds", clientSelector, "target, method"), "p50 {{target}} {{method}}"),
		q(quantile("0.99", "protobench_client_latency_seconds", clientSelector, "target, method"), "p99 {{target}} {{method}}"),
	)
}

func clientServiceTimePanel() Panel {
	return timeseries("Client service time p50 / p99",
		"Latency from the actual send to the response. A gap to the corrected latency means requests "+
			"waited to be sent.",
		unitSeconds,
		q(quantile("0.5", "protobench_client_service_time_seconds", clientSelector, "target, method"), "p50 {{target}} {{method}}"),
		q(quantile("0.99", "protobench_client_service_time_seconds", clientSelector, "target, method"), "p99 {{target}} {{method}}"),
	)
}

func clientInflightPanel() Panel {
	return timeseries("Client requests in flight",
		"Requests sent and not yet answered.",
		unitCount,
		q("sum by (target, method) (protobench_client_inflight{"+clientSelector+"})", "{{target}} {{method}}"),
	)
}

func clientSchedulerLagPanel() Panel {
	return timeseries("Client scheduler lag",
		"How far the open-model pacer is behind its schedule. A growing lag means the generator "+
			"cannot keep up and the step will be flagged rate-not-met.",
		unitSeconds,
		q("max by (target, method) (protobench_client_scheduler_lag_seconds{"+clientSelector+"})", "{{target}} {{method}}"),
	)
}

// --- Server (server metrics) ---

func serverRequestRatePanel() Panel {
	return timeseries("Server request rate",
		"Requests per second as the server counts them, by method and code.",
		unitReqPerSec,
		q("sum by (protocol, method, code) ("+rate("protobench_server_requests_total", serverSelector)+")", "{{protocol}} {{method}} {{code}}"),
	)
}

func serverLatencyPanel() Panel {
	return timeseries("Server handling time p50 / p99",
		"Time inside the server's handler: the part of the latency the protocol stack cannot blame "+
			"on the network or the client.",
		unitSeconds,
		q(quantile("0.5", "protobench_server_request_duration_seconds", serverSelector, "protocol, method"), "p50 {{protocol}} {{method}}"),
		q(quantile("0.99", "protobench_server_request_duration_seconds", serverSelector, "protocol, method"), "p99 {{protocol}} {{method}}"),
	)
}

func serverMessagesPanel() Panel {
	return rightAxis(timeseries("Server messages",
		"Messages per second (left) and bytes per second (right) for message patterns such as "+
			"ZeroMQ PUSH/PULL and PUB/SUB.",
		unitOpsPerSec,
		q("sum by (protocol, pattern) ("+rate("protobench_server_messages_total", serverSelector)+")", "msg/s {{protocol}} {{pattern}}"),
		q("sum by (protocol, pattern) ("+rate("protobench_server_message_bytes_total", serverSelector)+")", "bytes/s {{protocol}} {{pattern}}"),
	), "B", unitBytesPerS)
}

// --- Containers (cAdvisor) ---

// cpuCores is the CPU a set of containers used, in cores, per compose service.
func cpuCores(services string) string {
	return "sum by (" + serviceLabel + ") (" + rate("container_cpu_usage_seconds_total", services) + ")"
}

// cpuOfCap is the CPU used as a fraction of the container's CFS quota (the `cpus` cap).
func cpuOfCap(services string) string {
	by := "max by (" + serviceLabel + ") "
	return cpuCores(services) + " / on (" + serviceLabel + ") (" +
		by + "(container_spec_cpu_quota{" + services + "}) / " +
		by + "(container_spec_cpu_period{" + services + "}))"
}

func serverCPUPanel() Panel {
	return rightAxis(timeseries("Server container CPU",
		"CPU used by the server container in cores (left) and as a fraction of its cpus cap (right).",
		unitCores,
		q(cpuCores(serverServices), "cores {{"+serviceLabel+"}}"),
		q(cpuOfCap(serverServices), "of cap {{"+serviceLabel+"}}"),
	), "B", unitFraction)
}

func serverThrottlingPanel() Panel {
	sum := func(metric string) string {
		return "sum by (" + serviceLabel + ") (" + rate(metric, serverServices) + ")"
	}
	return rightAxis(timeseries("Server CPU throttling",
		"Share of CFS periods in which the server was throttled (left) and throttled seconds per "+
			"second (right). Any throttling means the server hit its cap and queued work.",
		unitFraction,
		q(sum("container_cpu_cfs_throttled_periods_total")+" / "+sum("container_cpu_cfs_periods_total"), "periods {{"+serviceLabel+"}}"),
		q(sum("container_cpu_cfs_throttled_seconds_total"), "seconds/s {{"+serviceLabel+"}}"),
	), "B", unitSeconds)
}

func serverMemoryPanel() Panel {
	return timeseries("Server memory working set",
		"The server container's working set, which is what the memory limit is enforced against.",
		unitBytes,
		q("max by ("+serviceLabel+") (container_memory_working_set_bytes{"+serverServices+"})", "{{"+serviceLabel+"}}"),
	)
}

func toolCPUPanel() Panel {
	return rightAxis(timeseries("Load tool container CPU",
		"CPU of the load tool's container in cores (left) and as a fraction of its cap (right). "+
			"Near the cap, the step is client-bound and measures the tool, not the server.",
		unitCores,
		q(cpuCores(toolServices), "cores {{"+serviceLabel+"}}"),
		q(cpuOfCap(toolServices), "of cap {{"+serviceLabel+"}}"),
	), "B", unitFraction)
}

// --- Host (node-exporter) ---

func hostCPUPerCorePanel(selector string) Panel {
	p := timeseries("Host CPU busy per core",
		"Non-idle share of each core. Client and server sit on disjoint cpusets, so each should "+
			"light up its own cores.",
		unitFraction,
		q(`sum by (cpu) (`+rate("node_cpu_seconds_total", joinSel(`mode!="idle"`, selector))+`)`, "cpu {{cpu}}"),
	)
	p.FieldConfig.Defaults.Max = float(1)
	return p
}

func hostCPUModesPanel() Panel {
	return stacked(timeseries("Host CPU by mode",
		"Cores spent in each mode, idle excluded. High softirq points at network processing, "+
			"high system at syscalls.",
		unitCores,
		q(`sum by (mode) (`+rate("node_cpu_seconds_total", joinSel(`mode!="idle"`, hostSelector))+`)`, "{{mode}}"),
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
		q("sum by (device) ("+rate("node_network_receive_bytes_total", sel)+")", "rx {{device}}"),
		q("sum by (device) ("+rate("node_network_transmit_bytes_total", sel)+")", "tx {{device}}"),
	)
}

func hostNetworkPacketsPanel() Panel {
	sel := joinSel(`device!="lo"`, hostSelector)
	return rightAxis(timeseries("Host network packets and drops",
		"Packets per second per interface (left) and dropped or errored packets (right).",
		unitPacketsPS,
		q("sum by (device) ("+rate("node_network_receive_packets_total", sel)+" + "+rate("node_network_transmit_packets_total", sel)+")", "packets {{device}}"),
		q("sum by (device) ("+rate("node_network_receive_drop_total", sel)+" + "+rate("node_network_transmit_drop_total", sel)+
			" + "+rate("node_network_receive_errs_total", sel)+" + "+rate("node_network_transmit_errs_total", sel)+")", "drops+errors {{device}}"),
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
