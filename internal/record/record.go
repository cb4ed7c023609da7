// Package record holds the normalized record every measurement becomes, whatever tool made it,
// so that one step measured by protobench, ghz, wrk or k6 can be compared field by field. It is a
// leaf: it imports nothing of ours, so the load generator, the tool adapters, the runner and the
// results writer can all share it without importing each other.
package record

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
)

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

	Target       string  `json:"target"` // server name: grpc, rest, netrpc, zeromq, python-grpc
	Tool         string  `json:"tool"`   // protobench, ghz, wrk, k6
	Method       string  `json:"method"`
	Model        string  `json:"model"` // closed or open
	Connections  int     `json:"connections"`
	Concurrency  int     `json:"concurrency"`
	Rate         float64 `json:"rate"` // target requests per second in the open model, 0 when closed
	PayloadBytes int     `json:"payload_bytes"`
	// InFlight is the step's requests in flight when it set in_flight (0 otherwise); Topology
	// says in words how they sat on connections. HTTPVersion and Encoding are set for HTTP
	// targets only.
	InFlight    int     `json:"in_flight,omitempty"`
	Topology    string  `json:"topology,omitempty"`
	HTTPVersion string  `json:"http_version,omitempty"`
	Encoding    string  `json:"encoding,omitempty"`
	DurationS   float64 `json:"duration_s"` // measured window, warm-up excluded

	// Requests counts every completed request, failed ones included; Errors is the failed part.
	Requests      int64   `json:"requests"`
	Errors        int64   `json:"errors"`
	ThroughputRPS float64 `json:"throughput_rps"`
	// LatencyMs is what the user saw: in the open model it counts from the intended send time
	// (corrected for coordinated omission). ServiceTimeMs counts from the actual send.
	LatencyMs     Latency  `json:"latency_ms"`
	ServiceTimeMs *Latency `json:"service_time_ms,omitempty"`

	ServerCPUSeconds       float64 `json:"server_cpu_seconds"`
	ServerCPUPercentOfCap  float64 `json:"server_cpu_percent_of_cap"`
	ServerMemMaxBytes      float64 `json:"server_mem_max_bytes"`
	ServerThrottledSeconds float64 `json:"server_throttled_seconds"`
	ClientCPUPercentOfCap  float64 `json:"client_cpu_percent_of_cap"`
	// ServerGOMAXPROCS is what a Go server's runtime reported during the step (0 for Python):
	// it should equal the server's CPU quota, or the server schedules more threads than it may run.
	ServerGOMAXPROCS    int     `json:"server_gomaxprocs,omitempty"`
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

	StartUnix float64 `json:"start_unix"` // measurement window, for Prometheus queries and Grafana links
	EndUnix   float64 `json:"end_unix"`
}

// CoreTime is how a set of cores spent a window, each mode as a percentage of their time
// (the modes add up to 100). Other is nice, iowait, irq and steal together.
type CoreTime struct {
	UserPercent    float64 `json:"user_percent"`
	SystemPercent  float64 `json:"system_percent"`
	SoftirqPercent float64 `json:"softirq_percent"`
	IdlePercent    float64 `json:"idle_percent"`
	OtherPercent   float64 `json:"other_percent"`
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
	for _, f := range r.Flags {
		if f == flag {
			return true
		}
	}
	return false
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
