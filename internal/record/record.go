// Package record holds the normalized record every measurement becomes, whatever tool made it,
// so that one step measured by any tool of internal/tool can be compared field by field. It is a
// leaf: it imports nothing of ours, so the load generator, the tool adapters, the runner and the
// results writer can all share it without importing each other.
package record

import (
	"fmt"
	"slices"
	"time"
)

// Validity flags a step can carry. They say why a number should not be trusted as it stands.
const (
	FlagClientBound = "client-bound" // the load generator's container was near its CPU cap
	FlagRateNotMet  = "rate-not-met" // achieved throughput below 95 % of the target rate
	FlagErrors      = "errors"       // more than 1 % of requests failed
	FlagThrottled   = "throttled"    // the server's cgroup was CFS-throttled during the step
	FlagNoisy       = "noisy"        // coefficient of variation above 10 % across repeats
	FlagFailed      = "failed"       // the step did not produce a measurement (see Error)
	// FlagUnsaturated marks a closed-loop step where neither the server nor the load tool
	// reached 90 % of its CPU cap, nor the server's cores 90 % busy: it measured round-trip
	// latency, not capacity.
	FlagUnsaturated = "unsaturated"
	// FlagSharedCores marks a run whose server and load tool ran on one machine without
	// disjoint cpusets (a swarm run on a single node: swarm has no cpuset), so that the two
	// competed for the same cores within their CPU quotas.
	FlagSharedCores = "shared-cores"
	// FlagBusyHost marks a run during whose window processes other than ours (not the run's
	// server, tool or observability containers) used a share of the server's or the tool's
	// cores at or above results.BusyHostPercent (CoreTime.OthersPercent): something else on
	// the machine competed with the measurement.
	FlagBusyHost = "busy-host"
	// FlagIncomplete marks an open-model run where more than IncompleteFlagFraction of the
	// requests scheduled in the measured window were never sent, or were still unanswered when
	// the run ended: they are in the latency (from their intended send time to the end of the
	// run) but neither in Requests nor in Errors.
	FlagIncomplete = "incomplete"
	// FlagLateStart marks a load generator given a shared start (one of several sharing a
	// step) that was ready only after that instant had passed: it started at once, later than
	// the others.
	FlagLateStart = "late-start"
	// FlagPartsApart marks a step several load generators shared whose measured windows did
	// not coincide (PartsApartFraction): its throughput is the total over the union of
	// the windows, which understates what the parts offered together.
	FlagPartsApart = "parts-apart"
	// FlagEncodingMismatch marks a run whose replies, as the server counted them, were not
	// encoded as the step's compression asked (gzip replies under none, or identity under
	// gzip): the run did other work than its step says.
	FlagEncodingMismatch = "encoding-mismatch"
	// FlagClientLatency marks an open-model record whose client's own scheduling lag (from a
	// request's intended send time to its actual send: the generator late, or every
	// connection busy) reached ClientLatencyFraction of the reported p99 at its own p99: that
	// much of the tail may have been spent in the client, not the server (ClientLatency).
	FlagClientLatency = "client-latency"
	// FlagCountMismatch marks a run whose tool counted more (or fewer) successful requests than
	// the server itself answered OK, by more than the requests in flight at the edges of the
	// window (ServerCount): a tool that counts a gRPC error in an HTTP 200 as a success, or
	// cannot decode a reply.
	FlagCountMismatch = "count-mismatch"
)

// ClientLatencyFraction is the share of the reported p99 latency that the client's own
// scheduling lag may reach at its p99 before the record is flagged client-latency. A fifth: the
// lag is at most what the client added to a request, so below it the client moved p99 by less
// than a fifth, the margin within which issue 36 asks our p50 to match an independent tool's.
// It also catches the case that issue found: gRPC at 4,000/s reported p99 14.0 ms with the
// generator's own lag at p99 3.2 ms (23 %), where h2load's slowest request on the same server
// took 6.0 ms; a quarter would have let that record through.
const ClientLatencyFraction = 0.2

// ClientLatency reports whether r's client lag reached ClientLatencyFraction of its p99.
func ClientLatency(r Record) bool {
	return r.Model == "open" && r.SchedulerLagMs != nil && r.LatencyMs.P99 > 0 &&
		r.SchedulerLagMs.P99 >= ClientLatencyFraction*r.LatencyMs.P99
}

// IncompleteFlagFraction is the share of scheduled requests left incomplete above which a run
// carries FlagIncomplete.
const IncompleteFlagFraction = 0.001

// PartsApartFraction is how far apart the measured windows of the load generators sharing a
// step may begin and end, as a share of the shortest window, and still count as one window;
// beyond it the record carries FlagPartsApart. It is 1 %, 50 ms of a 5-s window: within it the
// two ways of adding up the parts' throughput, the sum of their own rates and the total
// requests over the union of their windows, differ by about 1 % at most, less than the spread
// of repeated runs; beyond it they disagree by more. Parts given a shared start on one
// machine's three swarm nodes began within 2 ms of each other (docs/swarm.md); parts started
// as their tasks came up began up to 1.4 s apart (2.7 s in an earlier run).
const PartsApartFraction = 0.01

// Latency is a latency summary in milliseconds.
type Latency struct {
	Mean float64 `json:"mean"`
	P50  float64 `json:"p50"`
	P90  float64 `json:"p90"`
	P99  float64 `json:"p99"`
	P999 float64 `json:"p999"`
	Max  float64 `json:"max"`
}

// Record is one measured step and repeat. Field names are the schema of results.json and the
// header of results.csv; the load generator's own JSON result uses the same names.
type Record struct {
	Scenario string `json:"scenario"`
	Step     string `json:"step"`
	Repeat   int    `json:"repeat"`

	Target      string  `json:"target"` // server name: a target registry entry (internal/targets) or a custom one
	Tool        string  `json:"tool"`   // a tool adapter's name (internal/tool: tool.Names())
	Method      string  `json:"method"`
	Model       string  `json:"model"` // closed or open
	Connections int     `json:"connections"`
	Concurrency int     `json:"concurrency"`
	Rate        float64 `json:"rate"` // target requests per second in the open model, 0 when closed
	// LoadPercent and CapacityRPS are set on a latency-at-equal-load run (scenario rate_from):
	// Rate is LoadPercent % of CapacityRPS, the capacity the slowest target reached in
	// CapacityStep earlier in the same run.
	LoadPercent  float64 `json:"load_percent,omitempty"`
	CapacityRPS  float64 `json:"capacity_rps,omitempty"`
	CapacityStep string  `json:"capacity_step,omitempty"`
	PayloadBytes int     `json:"payload_bytes"`
	// InFlight is the step's requests in flight when it set in_flight (0 otherwise); Topology
	// says in words how they sat on connections. HTTPVersion and Encoding are set for HTTP
	// targets only.
	InFlight    int     `json:"in_flight,omitempty"`
	Topology    string  `json:"topology,omitempty"`
	HTTPVersion string  `json:"http_version,omitempty"`
	Encoding    string  `json:"encoding,omitempty"`
	DurationS   float64 `json:"duration_s"` // measured window, warm-up excluded
	// RequestsPerConnection is the step's connection churn: each connection carried that many
	// requests and was replaced (0: connections were reused for the whole run).
	RequestsPerConnection int `json:"requests_per_connection,omitempty"`

	// Compression is the step's setting: none or gzip. RequestEncoding and ReplyEncoding are
	// what the server counted over the window (protobench_server_encoded_messages_total): one
	// encoding ("identity", "gzip"), or each one's share when mixed ("gzip 40%, identity 60%");
	// empty where nothing was counted (a custom target; the Python server's requests).
	// ClientCompressedReplies is how many replies our generator read compressed in its window,
	// the client's cross-check (nil for the other tools).
	Compression             string `json:"compression,omitempty"`
	RequestEncoding         string `json:"request_encoding,omitempty"`
	ReplyEncoding           string `json:"reply_encoding,omitempty"`
	ClientCompressedReplies *int64 `json:"client_compressed_replies,omitempty"`

	// Requests counts every completed request, failed ones included; Errors is the failed part.
	// ThroughputRPS counts successful requests only: (Requests − Errors) / DurationS.
	Requests      int64   `json:"requests"`
	Errors        int64   `json:"errors"`
	ThroughputRPS float64 `json:"throughput_rps"`
	// Incomplete counts the open model's requests scheduled in the measured window that neither
	// succeeded nor failed: Unsent of them were never sent (the schedule outran the generator,
	// or the server stopped answering), the rest were in flight when the run ended. Each is in
	// LatencyMs with the time from its intended send to the end of the run.
	Incomplete int64 `json:"incomplete"`
	Unsent     int64 `json:"unsent,omitempty"`
	// LatencyMs is what the user saw: in the open model it counts from the intended send time
	// (corrected for coordinated omission). ServiceTimeMs counts from the actual send.
	LatencyMs     Latency  `json:"latency_ms"`
	ServiceTimeMs *Latency `json:"service_time_ms,omitempty"`
	// SchedulerLagMs is the client's own lag in the open model, from each request's intended
	// send time to its actual send (our generator only): what the latency holds of the client
	// being late or of every connection being busy. LatencyFloorMs is the fastest request of
	// the window, from its actual send: below it no tool on this path can see anything, and
	// differences between tools smaller than it say little.
	SchedulerLagMs *Latency `json:"scheduler_lag_ms,omitempty"`
	LatencyFloorMs float64  `json:"latency_floor_ms,omitempty"`
	// LatencyCount is how many latencies the histogram behind LatencyMs holds: every request
	// that completed and, in the open model, every incomplete one. Only a tool that keeps a
	// full histogram sets it (our generator); tools that report percentiles leave it 0. For a
	// step several load generators shared (ClientParts) it is the merged histogram's count,
	// the parts' counts added up.
	LatencyCount int64 `json:"latency_count,omitempty"`
	// ClientParts is set when several load generators, each on a client node of its own,
	// shared the step (tool.Split): what each measured by itself. The record's own figures are
	// the whole step's: its latencies come from the parts' histograms merged, never from
	// averaged percentiles.
	ClientParts []ClientPart `json:"client_parts,omitempty"`

	ServerCPUSeconds       float64 `json:"server_cpu_seconds"`
	ServerCPUPercentOfCap  float64 `json:"server_cpu_percent_of_cap"`
	ServerMemMaxBytes      float64 `json:"server_mem_max_bytes"`
	ServerThrottledSeconds float64 `json:"server_throttled_seconds"`
	ClientCPUPercentOfCap  float64 `json:"client_cpu_percent_of_cap"`
	// ServerGOMAXPROCS is what a Go server's runtime reported during the step (0 for Python):
	// it should equal the server's CPU quota, or the server schedules more threads than it may run.
	ServerGOMAXPROCS int `json:"server_gomaxprocs,omitempty"`
	// ServerGOMAXPROCSSet is the GOMAXPROCS the engine gave a Go server: on swarm, which has
	// no cpuset, its CPU limit rounded up (0 where the engine left it to Go, as compose does:
	// there the cpuset bounds what Go sees).
	ServerGOMAXPROCSSet int     `json:"server_gomaxprocs_set,omitempty"`
	CPUMicrosPerRequest float64 `json:"cpu_us_per_request"`

	Flags []string `json:"flags"`
	// Notes are caveats the tool states about its own figures (h2load cannot see grpc-status),
	// for the report to repeat beside them.
	Notes    []string `json:"notes,omitempty"`
	RawFiles []string `json:"raw_files,omitempty"` // paths under raw/, relative to the results folder
	Error    string   `json:"error,omitempty"`

	// Engine is what ran the containers: compose or swarm. Placement says where, for swarm:
	// "single-node", or the server's and the load tools' node hostnames.
	Engine    string `json:"engine,omitempty"`
	Placement string `json:"placement,omitempty"`
	// ObservabilityCPUSet is where the observability stack sat during the run, when the runner
	// placed it (compose): the client's core, or the server's for a client-bound tool on a host
	// with no core to spare (scenario.Layout.StackCPUSet).
	ObservabilityCPUSet string `json:"observability_cpuset,omitempty"`

	// ServerCores and ClientCores are how the server's and the load tools' cores spent the
	// window (compose: the layout's cpusets on this host), from node-exporter. The server's
	// own CPU share cannot tell a full core from one the kernel shares with it: softirq is the
	// kernel's deferred work (packet handling for the containers' network, timers), not all of
	// it charged to the container, and it grows with the packets a protocol needs per request.
	ServerCores *CoreTime `json:"server_cores,omitempty"`
	ClientCores *CoreTime `json:"client_cores,omitempty"`
	// Clock is the server's and the tool's core clock over the window, the governor and the
	// power source (record/placement.go).
	Clock *Clock `json:"clock,omitempty"`
	// TLS is what the server's handshakes negotiated in a TLS run (nil for cleartext).
	TLS *TLSState `json:"tls,omitempty"`
	// ServerCoreMicrosPerRequest is the server's cores' whole cost per request: their busy time
	// (user + system + softirq + irq, less the observability stack's CPU when it shared them)
	// in µs per completed request. CPUMicrosPerRequest counts only the container's own CPU, and
	// misses the kernel's packet work on its core that is charged to no one.
	ServerCoreMicrosPerRequest float64 `json:"server_core_us_per_request,omitempty"`

	StartUnix float64 `json:"start_unix"` // measurement window, for Prometheus queries and Grafana links
	EndUnix   float64 `json:"end_unix"`

	// The server's own count and what crossed the wire (internal/servercount; the runner reads
	// them around the tool). ServerOK and ServerErrors are the server's request counter
	// (protobench_server_requests_total) by result code over the tool's measured run;
	// ServerCount says how they were read, or "not checked: <why>" (a custom target without
	// our metrics). WarmupRequests and WarmupErrors are a tool's own warm-up inside its run,
	// where it reports one (our generator), so that the server's count can leave it out.
	ServerOK       int64  `json:"server_ok"`
	ServerErrors   int64  `json:"server_errors"`
	ServerCount    string `json:"server_count,omitempty"`
	WarmupRequests int64  `json:"warmup_requests,omitempty"`
	WarmupErrors   int64  `json:"warmup_errors,omitempty"`
	// Wire is what crossed the server's network interface per request and what spoke on it.
	Wire *Wire `json:"wire,omitempty"`
}

// Wire is what was on the wire during a run: bytes per request at the server's network
// interface (cAdvisor, for any target), and what the two sides spoke.
type Wire struct {
	// RxBytesPerRequest and TxBytesPerRequest are the bytes the server's container received
	// and sent over the measured window, per completed request (headers, framing, TLS, TCP/IP
	// included); 0 where cAdvisor reported no network series.
	RxBytesPerRequest float64 `json:"rx_bytes_per_request,omitempty"`
	TxBytesPerRequest float64 `json:"tx_bytes_per_request,omitempty"`
	// Protocol is the HTTP version or ALPN (h2, h2c, HTTP/1.1), or the target's own protocol.
	Protocol    string `json:"protocol"`
	Encoding    string `json:"encoding,omitempty"`
	Compression string `json:"compression"`
	TLSVersion  string `json:"tls_version,omitempty"`
	// RequestsPerConnection is the completed requests over the connections opened in the
	// window; ConnectionsFrom says where that count came from.
	RequestsPerConnection float64 `json:"requests_per_connection,omitempty"`
	ConnectionsFrom       string  `json:"connections_from,omitempty"`
}

// CompressionOf is a record's compression setting, "none" where it names none.
func (r Record) CompressionOf() string {
	if r.Compression == "" {
		return "none"
	}
	return r.Compression
}

// ClientPart is one of the load generators that shared a step: its part of the load (tool.Split
// numbers the parts from 1), the client node it ran on, and its own figures.
type ClientPart struct {
	Part int `json:"part"`
	// Node is the hostname of the client node the part ran on, when the engine knows it.
	Node        string `json:"node,omitempty"`
	Connections int    `json:"connections"`
	Concurrency int    `json:"concurrency"`
	// Rate is the part's share of the open model's rate (0 when closed).
	Rate          float64 `json:"rate,omitempty"`
	Requests      int64   `json:"requests"`
	Errors        int64   `json:"errors"`
	ThroughputRPS float64 `json:"throughput_rps"`
	DurationS     float64 `json:"duration_s"`
	LatencyP99Ms  float64 `json:"latency_p99_ms"`
	// LatencyCount is how many latencies the part's own histogram holds; the parts' counts
	// add up to the record's LatencyCount, the merged histogram's.
	LatencyCount int64 `json:"latency_count"`
	// Start and End are the part's measured window, in UTC. Parts given a shared start
	// measure the same window; the record is flagged parts-apart when theirs do not coincide.
	Start time.Time `json:"start,omitzero"`
	End   time.Time `json:"end,omitzero"`
	// StartWaitS is how long the part, its connections open, waited for the shared start;
	// StartLateS how long after it the part was ready (it then started at once: late-start).
	StartWaitS float64 `json:"start_wait_s,omitempty"`
	StartLateS float64 `json:"start_late_s,omitempty"`
	Error      string  `json:"error,omitempty"`
}

// String is the part in a few words, as results.csv shows it.
func (p ClientPart) String() string {
	node := p.Node
	if node == "" {
		node = "?"
	}
	return fmt.Sprintf("part %d on %s: %d requests, %d latencies, %g req/s", p.Part, node, p.Requests, p.LatencyCount, p.ThroughputRPS)
}

// CoreTime is how a set of cores spent a window, each mode as a percentage of their time
// (the modes add up to 100). Other is nice, iowait and steal together (and irq in records
// written before IrqPercent existed): time the cores were not doing the server's work.
type CoreTime struct {
	UserPercent    float64 `json:"user_percent"`
	SystemPercent  float64 `json:"system_percent"`
	SoftirqPercent float64 `json:"softirq_percent"`
	IrqPercent     float64 `json:"irq_percent"`
	IdlePercent    float64 `json:"idle_percent"`
	OtherPercent   float64 `json:"other_percent"`
	// OthersPercent is the share of the cores' time that processes other than ours used:
	// their user, nice and system time less the CPU of our containers on them (cAdvisor), nil
	// where that could not be read. Kernel work outside any process (softirq, irq) is left
	// out: our own traffic's packet handling lands there.
	OthersPercent *float64 `json:"others_percent,omitempty"`
	// BusySeconds is user + system + softirq + irq in CPU-seconds over the window, summed over
	// the cores; ObservabilitySeconds is the observability stack's container CPU in the window
	// when it sat on these cores (0 otherwise), which BusyPercent leaves out.
	BusySeconds          float64 `json:"busy_seconds,omitempty"`
	ObservabilitySeconds float64 `json:"observability_seconds,omitempty"`
	// BusyPercent is the cores' busy share less the observability stack's: the share of their
	// time spent on the server and the kernel's work for it.
	BusyPercent float64 `json:"busy_percent,omitempty"`
}

// Busy is the cores' busy share in percent (BusyPercent, or the modes' sum in a record that
// predates it): steal, iowait and nice are not the server's work and never count.
func (c CoreTime) Busy() float64 {
	if c.BusyPercent > 0 {
		return c.BusyPercent
	}
	return c.UserPercent + c.SystemPercent + c.SoftirqPercent + c.IrqPercent
}

// Valid reports whether a record holds a measurement (it did not fail).
func (r Record) Valid() bool {
	return r.Error == "" && !r.HasFlag(FlagFailed)
}

// ClientBoundPercent is where a load tool stops being trusted: at or above it, as a share of its
// CPU cap, the tool, not the server, may be what limits throughput (FlagClientBound).
const ClientBoundPercent = 90

// ToolFilledItsCore reports whether the run's tool was at ClientBoundPercent of its CPU cap or
// more while the server used less of its own, so that the server's core had room the tool's did
// not. known is false when the run failed or either side's CPU is missing.
func (r Record) ToolFilledItsCore() (filled, known bool) {
	if !r.Valid() || r.ClientCPUPercentOfCap <= 0 || r.ServerCPUPercentOfCap <= 0 {
		return false, false
	}
	return r.ClientCPUPercentOfCap >= ClientBoundPercent && r.ServerCPUPercentOfCap < r.ClientCPUPercentOfCap, true
}

// HasFlag reports whether the record carries flag.
func (r Record) HasFlag(flag string) bool {
	return slices.Contains(r.Flags, flag)
}

// AddFlag gives the record flag, once.
func (r *Record) AddFlag(flag string) {
	if !r.HasFlag(flag) {
		r.Flags = append(r.Flags, flag)
	}
}

// Successes is the count of requests that succeeded.
func (r Record) Successes() int64 {
	if r.Errors >= r.Requests {
		return 0
	}
	return r.Requests - r.Errors
}

// SuccessRPS is the throughput of successful requests over a window of seconds.
func SuccessRPS(requests, errors int64, seconds float64) float64 {
	if seconds <= 0 || requests <= errors {
		return 0
	}
	return float64(requests-errors) / seconds
}

// ErrorFraction is the share of requests that failed. Requests counts every completed request,
// failed ones included; if a tool reported fewer requests than errors, the two are added.
func (r Record) ErrorFraction() float64 {
	switch {
	case r.Errors <= 0:
		return 0
	case r.Requests >= r.Errors && r.Requests > 0:
		return float64(r.Errors) / float64(r.Requests)
	}
	return float64(r.Errors) / float64(r.Requests+r.Errors)
}

// TLSState is a TLS run as its server recorded it (its /metrics handshake counters): what was
// negotiated, how often connections shook hands in the measured window, and the server CPU a
// handshake cost (sampled on a locked thread; 0 where not measured).
type TLSState struct {
	Version string `json:"version"`          // e.g. TLS 1.3
	Cipher  string `json:"cipher"`           // e.g. TLS_AES_128_GCM_SHA256
	Curve   string `json:"curve"`            // key exchange, e.g. X25519MLKEM768
	ALPN    string `json:"alpn,omitempty"`   // h2, http/1.1, or empty (net/rpc)
	Source  string `json:"source,omitempty"` // where the figures come from, when not the server's counters
	// Handshakes counts the server's completed handshakes from its start (warm-up included),
	// Resumed those that resumed a session.
	Handshakes float64 `json:"handshakes"`
	Resumed    float64 `json:"resumed"`
	// HandshakesPerSec is over the measured window.
	HandshakesPerSec float64 `json:"handshakes_per_sec"`
	// CPUUsFull and CPUUsResumed are server CPU microseconds per handshake.
	CPUUsFull    float64 `json:"cpu_us_per_full_handshake,omitempty"`
	CPUUsResumed float64 `json:"cpu_us_per_resumed_handshake,omitempty"`
	Failures     float64 `json:"handshake_failures,omitempty"`
}
