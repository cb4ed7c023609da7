package genbench

import (
	"fmt"
	"io"
	"sort"
	"strconv"
	"strings"
	"text/tabwriter"
)

// Targets from the load-generator issue (and, for h2load, the gRPC vs REST issue).
const (
	TargetVsGHZ       = 1.4  // protobench ≥ 1.4 × ghz, gRPC GetUser
	TargetVsWrk       = 0.9  // protobench ≥ 0.9 × wrk, HTTP GET GetUser
	TargetVsK6        = 3.0  // protobench ≥ 3 × k6, both
	TargetVsH2load    = 1.0  // protobench ≥ 1.0 × h2load, every multiplexed protocol it speaks
	TargetVsH2loadTLS = 0.95 // protobench ≥ 0.95 × h2load on the same server, over TLS (issue 27)
	TargetServerCPU   = 95.0 // % of the server's one core, every protocol
)

// ratios are the checks the table ends with: ours (or ours on the protocol's library) over
// another generator on one protocol.
var ratios = []struct {
	ours, other, protocol, what string
	target                      float64
}{
	{ours, "ghz", "grpc", "gRPC GetUser", TargetVsGHZ},
	{"protobench-lib", "ghz", "grpc", "gRPC GetUser", TargetVsGHZ},
	{ours, "h2load", "grpc", "gRPC GetUser", TargetVsH2load},
	{ours, "h2load", "h2c", "h2c GET GetUser", TargetVsH2load},
	{ours, "h2load", "grpc-tls", "gRPC over TLS GetUser", TargetVsH2loadTLS},
	{ours, "h2load", "https", "HTTPS/1.1 GET GetUser", TargetVsH2loadTLS},
	{ours, "h2load", "h2", "HTTPS/2 GET GetUser", TargetVsH2loadTLS},
	{ours, "wrk", "http", "HTTP GET GetUser", TargetVsWrk},
	{ours, "wrk", "https", "HTTPS/1.1 GET GetUser", TargetVsWrk},
	{ours, "k6", "grpc", "gRPC GetUser", TargetVsK6},
	{"protobench-lib", "k6", "grpc", "gRPC GetUser", TargetVsK6},
	{ours, "k6", "http", "HTTP GET GetUser", TargetVsK6},
}

// report prints the table and the ratios.
func report(w io.Writer, ms []measurement) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "protocol\tgenerator\tthroughput rps\tserver CPU %\tgenerator CPU %\tothers on server core %\tothers on generator core %\tserver µs/req\tgenerator µs/req\tp50 ms\tp99 ms\terrors\t")
	get := map[string]measurement{}
	for _, m := range ms {
		get[m.protocol+"/"+m.tool] = m
		if m.err != nil {
			fmt.Fprintf(tw, "%s\t%s\tfailed\t\t\t\t\t\t\t\t\t\t\n", m.protocol, m.tool)
			continue
		}
		fmt.Fprintf(tw, "%s\t%s\t%.0f\t%.0f\t%.0f\t%.0f\t%.0f\t%.1f\t%.1f\t%.2f\t%.2f\t%d\t\n", m.protocol, m.tool, m.rps, m.serverCPU, m.clientCPU,
			m.serverOther, m.clientOther, m.serverUS, m.clientUS, m.p50ms, m.p99ms, m.errors)
	}
	tw.Flush()
	fmt.Fprintln(w, "(\"others\": the core's busy time beyond the process itself: other processes, and kernel work such as loopback TCP done there for either side.)")
	reportTLS(w, ms)

	fmt.Fprintln(w)
	tw = tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "check\tmeasured\ttarget\tresult")
	for _, r := range ratios {
		a, okA := get[r.protocol+"/"+r.ours]
		o, okO := get[r.protocol+"/"+r.other]
		if !okA || !okO || a.err != nil || o.err != nil || o.rps == 0 {
			continue
		}
		ratio := a.rps / o.rps
		fmt.Fprintf(tw, "%s / %s, %s\t%.2f×\t≥ %s×\t%s\n", r.ours, r.other, r.what, ratio, targetText(r.target), verdict(ratio >= r.target))
	}
	var protocols []string
	for _, m := range ms {
		if m.tool == ours && m.err == nil {
			protocols = append(protocols, m.protocol)
		}
	}
	sort.Strings(protocols)
	for _, p := range protocols {
		c := get[p+"/"+ours].serverCPU
		fmt.Fprintf(tw, "server CPU driven by protobench, %s\t%.0f %%\t≥ %.0f %%\t%s\n", p, c, TargetServerCPU, verdict(c >= TargetServerCPU))
	}
	for _, p := range protocols {
		m := get[p+"/"+ours]
		if m.serverUS > 0 {
			r := m.clientUS / m.serverUS
			fmt.Fprintf(tw, "protobench CPU per request / server's, %s\t%.2f\t≤ %.2f\t%s\n", p, r, 100/TargetServerCPU, verdict(r <= 100/TargetServerCPU))
		}
	}
	tw.Flush()
	fmt.Fprintln(w, strings.TrimSpace(`
(On equal cores the server reaches its cap first when the generator spends less CPU per request than the server does; this ratio holds up on a busy machine, where the CPU shares above do not.)`))
}

// reportTLS says, for each TLS row's generator, what the server negotiated with it: the same
// version, cipher, key exchange and ALPN for every generator of a row is what makes its ratio
// fair.
func reportTLS(w io.Writer, ms []measurement) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	header := false
	for _, m := range ms {
		if m.tls == "" {
			continue
		}
		if !header {
			fmt.Fprintln(w)
			fmt.Fprintln(tw, "TLS row\tgenerator\tnegotiated (the server's handshake counter)")
			header = true
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\n", m.protocol, m.tool, m.tls)
	}
	tw.Flush()
}

// targetText prints a target with the digits it has, and at least one decimal: 1.0, 1.4, 0.95.
func targetText(t float64) string {
	s := strconv.FormatFloat(t, 'f', -1, 64)
	if !strings.Contains(s, ".") {
		s += ".0"
	}
	return s
}

func verdict(ok bool) string {
	if ok {
		return "ok"
	}
	return "MISSED"
}
