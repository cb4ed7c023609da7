package dashboards

import (
	"strings"
)

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
