package dashboards

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
