package dashboards

import "github.com/protobench/protobench/internal/targets"

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
			targets.ProtocolTitle(targets.ZMQ)+" PUSH/PULL and PUB/SUB.",
		unitOpsPerSec,
		q("sum by ("+byStep("protocol, pattern")+") ("+serverSeries(rate("protobench_server_messages_total", serverSelector))+")", "msg/s {{step}} {{target}} {{pattern}}"),
		q("sum by ("+byStep("protocol, pattern")+") ("+serverSeries(rate("protobench_server_message_bytes_total", serverSelector))+")", "bytes/s {{step}} {{target}} {{pattern}}"),
	), "B", unitBytesPerS))
}

// --- Server TLS (the servers' handshake counters, internal/serverkit/tls.go) ---

// handshakeKinds are the values of the handshake series' resumed label, as the panels name them:
// a full handshake makes a new session (key exchange and certificate), a resumed one takes up a
// session ticket from an earlier connection.
var handshakeKinds = []struct{ resumed, name string }{{"false", "full"}, {"true", "resumed"}}

// handshakeRate is the server's handshakes per second of one kind, per step and target.
func handshakeRate(metric, resumed string) string {
	return "sum by (" + byStep("") + ") (" + serverSeries(rate(metric, serverSelector+`,resumed="`+resumed+`"`)) + ")"
}

func serverTLSHandshakesPanel() Panel {
	var qs []Target
	for _, k := range handshakeKinds {
		qs = append(qs, q(handshakeRate("protobench_tls_handshakes_total", k.resumed), k.name+" {{step}} {{target}}"))
	}
	return expecting(ExpectMaybe, timeseries("Server TLS handshakes",
		"TLS handshakes per second as the server counts them, full and resumed. They rise only "+
			"while a step churns connections (requests_per_connection) or its clients reconnect; a "+
			"step that keeps its connections shows its opening handshakes, then zero. A cleartext "+
			"step shows no data, and so does the Python server (gRPC core does not count handshakes).",
		unitOpsPerSec, qs...))
}

// serverTLSHandshakeCPUPanel divides the sampled handshakes' CPU by their count; a window in
// which no handshake was sampled (one in 8 is) has no value rather than 0/0.
func serverTLSHandshakeCPUPanel() Panel {
	var qs []Target
	for _, k := range handshakeKinds {
		qs = append(qs, q(handshakeRate("protobench_tls_handshake_cpu_seconds_total", k.resumed)+" / ("+
			handshakeRate("protobench_tls_handshake_cpu_samples_total", k.resumed)+" > 0)", k.name+" {{step}} {{target}}"))
	}
	return expecting(ExpectMaybe, timeseries("Server CPU per TLS handshake",
		"Server CPU (its thread's user and system time) per full and per resumed handshake, from "+
			"the one handshake in 8 each server times. No data where no handshake was timed in the "+
			"window: cleartext steps, the Python server, and a step that keeps its connections once "+
			"they are open.",
		unitSeconds, qs...))
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
