// Package tool is the seam between the runner and the load tools (protobench's own generator,
// ghz, wrk/wrk2, h2load, k6). Each tool lives in a sub-package that registers an Adapter: building
// its command line from a step is one pure function, parsing its machine-readable output is
// another, and its Capabilities say what it can drive.
package tool

import (
	"fmt"
	"slices"
	"sort"
	"sync"
	"time"

	"github.com/protobench/protobench/internal/record"
	"github.com/protobench/protobench/internal/targets"
)

// Invocation is everything a tool needs to know to load one target for one step.
type Invocation struct {
	Target       string // target name: a registry target (internal/targets) or a scenario's custom one
	Address      string // host:port of the server on the compose network (or loopback natively)
	Scheme       string // the target's protocol (targets.Protocols): what the address speaks
	Method       string // contract method name: Echo, GetUser, Multiply, Divide, EchoStream
	Pattern      string // the target's client pattern (targets.Pattern); empty for the default
	Model        string // "closed" or "open"
	Connections  int
	Concurrency  int     // in-flight requests per connection in the closed model
	RatePerSec   float64 // total target rate in the open model
	PayloadBytes int
	// HTTPVersion ("1.1" or "2", h2c) and Encoding ("json" or "protobuf") are set for HTTP
	// targets only.
	HTTPVersion string
	Encoding    string
	// CAFile, when set, makes the invocation TLS: the run's CA certificate as the tool sees it
	// (targets.TLSMount in its container); ServerName is the name the server certificate holds.
	CAFile     string
	ServerName string
	// HostCAFile is the same CA on the host, for checks that run there (Adapter.Check): the
	// generator's argument parser reads the CA, and the container's path is not the host's.
	HostCAFile string
	Warmup     time.Duration // 0 when the runner does the warm-up as a separate invocation
	Duration   time.Duration
	// StartAt, when set, is the instant the tool is to start its warm-up at, its connections
	// open: the shared start of the parts of a split step (Split), so that they measure one
	// window. Only a tool that declares Capabilities.Parts takes it.
	StartAt time.Time

	// RequestsPerConnection, when positive, closes each connection after that many requests and
	// opens a new one (connection churn); only tools whose Capabilities.Churn lists the
	// protocol take it.
	RequestsPerConnection int
	// Compression is the step's compression: "none" (or empty) sends and accepts nothing
	// compressed; "gzip" compresses requests and accepts compressed replies, only for tools
	// whose Capabilities.Gzip lists the protocol.
	Compression string

	// RawDir is the directory, as the tool sees it (inside its container), where it may write
	// output files; RawPrefix is the file-name prefix reserved for this invocation.
	RawDir    string
	RawPrefix string

	// Request is the call a custom target (a scenario's custom_targets) is measured with,
	// instead of the contract's Method; nil for the contract.
	Request *Request

	// Labels are attached to any live metrics the tool exports (scenario, step, run_id).
	Labels map[string]string
	// PrometheusURL is where a tool that pushes metrics (remote write) should send them; empty
	// when live metrics are off.
	PrometheusURL string
}

// Request is a custom target's own call. For gRPC, ProtoFile is the .proto as the tool sees it
// (the runner copies it under RawDir; its folder is the import path), Call the full method
// package.Service/Method and Data the request in protobuf's JSON mapping. For HTTP, the method,
// path, headers ("Name: value") and body.
type Request struct {
	ProtoFile string
	// HostProtoFile is the same file on the host, for checks that run there (Adapter.Check).
	HostProtoFile string
	Call          string
	Data          string

	HTTPMethod  string
	HTTPPath    string
	HTTPHeaders []string
	HTTPBody    string
}

// Raw is a tool's untouched output from one invocation.
type Raw struct {
	Stdout []byte
	Stderr []byte
	// Files holds output files the tool wrote under RawDir with RawPrefix, keyed by base name.
	Files map[string][]byte
}

// Adapter turns an Invocation into a command line and the tool's output into a Record.
type Adapter interface {
	// Name is the tool name used in scenarios and results; Names lists every registered one.
	Name() string
	// Service is the compose service (and image) the tool runs in.
	Service() string
	// Check reports why the tool cannot run this invocation (e.g. wrk has no rate, ghz speaks
	// only gRPC), or nil.
	Check(inv Invocation) error
	// OwnWarmup is true when the tool excludes Invocation.Warmup by itself; otherwise the runner
	// runs a separate, discarded warm-up invocation first.
	OwnWarmup() bool
	// Args is the command line (without the program name) for the invocation. It is pure.
	Args(inv Invocation) []string
	// Parse fills the measured fields of a Record (requests, errors, throughput, latency,
	// duration) from the raw output. It is pure.
	Parse(inv Invocation, raw Raw) (record.Record, error)
	// InputFiles are the files the tool reads for the invocation (such as ghz's request data
	// for a large payload), by path under RawDir: the runner writes them there before running
	// the tool. nil when it reads none. It is pure.
	InputFiles(inv Invocation) map[string][]byte
	// Capabilities says what the tool can drive, so that scenarios are checked when they load
	// and the runner picks the tool's image without knowing tools by name.
	Capabilities() Capabilities
}

// Capabilities is what a tool can drive, and how it runs (its image, program and compose
// lines, whether a step's load can be shared among client nodes): declared data the runner, the
// generated files and the lab bench read instead of the tool's name. What it can drive is a
// summary of what the adapter's Check accepts, coarse enough to check a scenario before any run:
// Check still has the last word on each invocation.
type Capabilities struct {
	// Protocols are the target protocols the tool speaks (targets.Protocols).
	Protocols []string
	// Methods are the contract methods it can send; nil means every method of the protocol.
	Methods []string
	// Models are the load models it runs: "closed", "open" or both.
	Models []string
	// HTTP lists the HTTP version and body encoding pairs it can send to an HTTP target.
	HTTP []HTTPMode
	// Mix is true when it runs a weighted mix of methods in one step.
	Mix bool
	// Requests is true when it can send a custom target's own Request.
	Requests bool
	// TLS is true when it can drive a TLS step, trusting the run's CA (Invocation.CAFile).
	TLS bool
	// Churn lists the protocols on which it can close each connection after
	// Invocation.RequestsPerConnection requests and open a new one (connection churn).
	Churn []string
	// Gzip lists the protocols on which it can compress its requests with gzip and read gzip
	// replies (Invocation.Compression gzip). Every tool can run compression none: the servers
	// then compress nothing whatever a client advertises (ghz and k6 advertise gzip through
	// grpc-go's registered codec; the record's reply_encoding, read from the server, shows it).
	Gzip []string
	// Image is the logical image (internal/images) the tool runs from; ImageVariant, when set,
	// is the variant that image must hold (wrk2 shares wrk's image where wrk2 could be built).
	Image        string
	ImageVariant string
	// Limits says in words what the tool cannot drive, for messages that refuse a step.
	Limits string
	// ClientBound is true for a tool that spends more CPU per request than the servers it loads
	// (docs/generator.md: k6 65-81 us, ghz 19 us, against 10-28 us for the
	// servers), so that its steps are bound by its own core while the server's has room. On a
	// host where the observability stack shares the client's core, the stack moves to the
	// server's for such a tool's steps (scenario.Layout.StackCPUSet).
	ClientBound bool
	// Program is the executable the runner starts in the tool's image, in place of the
	// service's default entrypoint (wrk2 and wrk share the wrk service); empty: the entrypoint.
	Program string
	// Compose is what the tool's compose service (Service, generated into
	// compose/docker-compose.yml by `protobench generate`) holds beyond the shared tool block, its
	// image and its entrypoint (Program): YAML lines at the service's indentation (four
	// spaces), such as its environment and extra volumes. Tools sharing a service declare the
	// same.
	Compose string
	// LiveMetrics is how the tool's own metrics reach Prometheus during a run: LiveScrape,
	// LiveRemoteWrite, or "" when they do not (the dashboards' client panels then stay empty).
	LiveMetrics string
	// Parts, when set, lets several client nodes share one step (Split): its results merge
	// without averaging percentiles (full histograms). nil for a tool that runs on one client
	// node.
	Parts PartsMerger
}

// How a tool's live metrics reach Prometheus (Capabilities.LiveMetrics).
const (
	LiveScrape      = "scrape"       // Prometheus scrapes the tool's /metrics
	LiveRemoteWrite = "remote-write" // the tool pushes them (Prometheus' remote-write receiver)
)

// HTTPMode is one HTTP version ("1.1", or "2" for h2c) with one body encoding ("json",
// "protobuf").
type HTTPMode struct{ Version, Encoding string }

// Speaks reports whether the tool speaks protocol.
func (c Capabilities) Speaks(protocol string) bool { return slices.Contains(c.Protocols, protocol) }

// Churns reports whether the tool can churn protocol's connections.
func (c Capabilities) Churns(protocol string) bool { return slices.Contains(c.Churn, protocol) }

// Gzips reports whether the tool can run compression gzip on protocol.
func (c Capabilities) Gzips(protocol string) bool { return slices.Contains(c.Gzip, protocol) }

// Runs reports whether the tool runs the load model.
func (c Capabilities) Runs(model string) bool { return slices.Contains(c.Models, model) }

// Sends reports whether the tool can send method.
func (c Capabilities) Sends(method string) bool {
	return c.Methods == nil || slices.Contains(c.Methods, method)
}

// SendsHTTP reports whether the tool can send HTTP/version requests with encoding bodies.
func (c Capabilities) SendsHTTP(version, encoding string) bool {
	return slices.Contains(c.HTTP, HTTPMode{version, encoding})
}

var (
	mu       sync.RWMutex
	adapters = map[string]Adapter{}
)

// Register makes an adapter available by name; sub-packages call it from init.
func Register(a Adapter) {
	mu.Lock()
	defer mu.Unlock()
	if _, dup := adapters[a.Name()]; dup {
		panic(fmt.Sprintf("tool: adapter %q registered twice", a.Name()))
	}
	adapters[a.Name()] = a
}

// Lookup returns the adapter registered under name.
func Lookup(name string) (Adapter, bool) {
	mu.RLock()
	defer mu.RUnlock()
	a, ok := adapters[name]
	return a, ok
}

// Names lists the registered tools in order.
func Names() []string {
	mu.RLock()
	defer mu.RUnlock()
	names := make([]string, 0, len(adapters))
	for n := range adapters {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// LiveMetricsOf is how the named tool's live metrics reach Prometheus, as its adapter declares
// (Capabilities.LiveMetrics): LiveScrape, LiveRemoteWrite, or "" for a tool that has none or
// is not registered.
func LiveMetricsOf(name string) string {
	a, ok := Lookup(name)
	if !ok {
		return ""
	}
	return a.Capabilities().LiveMetrics
}

// GoMemLimit is the soft heap limit (GOMEMLIMIT, bytes) for a Go tool in a container capped at
// capBytes: 80 % of the cap, so that a tool told to collect garbage less often (k6's GOGC)
// collects more often again as it nears the cap instead of being OOM-killed.
func GoMemLimit(capBytes int64) int64 { return capBytes / 10 * 8 }

// CheckHTTP reports why a tool with capabilities c cannot send the invocation's HTTP version and
// encoding (empty ones are HTTP/1.1 and JSON, as HTTP steps always were), or nil; invocations of
// other protocols pass.
func (c Capabilities) CheckHTTP(name string, inv Invocation) error {
	if inv.Scheme != targets.HTTP {
		return nil
	}
	version, encoding := inv.HTTPVersion, inv.Encoding
	if version == "" {
		version = targets.HTTP1
	}
	if encoding == "" {
		encoding = targets.EncodingJSON
	}
	if !c.SendsHTTP(version, encoding) {
		return fmt.Errorf("%s cannot send HTTP/%s requests with %s bodies", name, version, encoding)
	}
	return nil
}

// CheckCompression reports why the tool cannot run inv's compression, or nil: every tool runs
// none, and gzip only on the protocols its Capabilities.Gzip lists.
func CheckCompression(name string, c Capabilities, inv Invocation) error {
	switch inv.Compression {
	case "", "none":
		return nil
	case "gzip":
		if c.Gzips(inv.Scheme) {
			return nil
		}
		return fmt.Errorf("%s cannot compress %s requests with gzip", name, inv.Scheme)
	}
	return fmt.Errorf("compression %q: expected none or gzip", inv.Compression)
}
