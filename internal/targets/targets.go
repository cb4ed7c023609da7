// Package targets is the one declaration of every reference server protobench measures: its
// name, protocol, image, ports, health check, capabilities, metrics endpoint, knobs and default
// caps. The scenario catalog, the runner, servertest, the dashboards, the image catalog and the
// generated compose and Prometheus files all read it, so a new server is one entry here.
package targets

import (
	"slices"
	"strings"
	"time"

	"github.com/protobench/protobench/internal/contract"
)

// Protocols: the scheme a target's address speaks, which is also the name of the load
// generator's driver for it and what a tool declares it can drive.
const (
	GRPC    = "grpc"
	HTTP    = "http"
	Connect = "connect" // the Connect protocol (connectrpc.com): unary POSTs of protobuf or JSON
	NetRPC  = "netrpc"
	ZMQ     = "zmq"
)

// Protocols lists every protocol, in the order the documentation uses.
var Protocols = []string{GRPC, HTTP, Connect, NetRPC, ZMQ}

// protocolTitles are the protocols' names in prose: messages, help and dashboards spell each
// one this way (ProtocolTitle), never as the scheme or a target's name.
var protocolTitles = map[string]string{GRPC: "gRPC", HTTP: "HTTP", Connect: "Connect", NetRPC: "net/rpc", ZMQ: "ZeroMQ"}

// ProtocolTitle is protocol's name in prose ("ZeroMQ" for zmq), or protocol itself when it is
// not one of Protocols.
func ProtocolTitle(protocol string) string {
	if t, ok := protocolTitles[protocol]; ok {
		return t
	}
	return protocol
}

// OverHTTP marks the protocols whose requests are plain HTTP requests, so that a step picks their
// HTTP version (1.1 or h2c) and body encoding as it does REST's, and HTTP/1.1 carries one request
// per connection.
var OverHTTP = map[string]bool{HTTP: true, Connect: true}

// HTTP versions and body encodings an HTTP target can serve; the first of each is the default.
const (
	HTTP1 = "1.1"
	HTTP2 = "2" // cleartext HTTP/2 with prior knowledge (h2c)

	EncodingJSON     = "json"
	EncodingProtobuf = "protobuf"
)

// MethodPublish is the ZeroMQ-only method that makes the server publish its payload on PUB.
const MethodPublish = "Publish"

// Knob kinds: how a knob's value is checked.
const (
	KnobInt      = "int"
	KnobBool     = "bool"
	KnobSize     = "size"
	KnobDuration = "duration"
	KnobEnum     = "enum"
)

// Knob is one setting of a target a scenario may change: the environment variable the server reads
// it from and how its value is checked.
type Knob struct {
	Env  string // the server's variable; empty for a client knob
	Kind string // KnobInt, KnobBool, KnobSize, KnobDuration or KnobEnum
	Min  int64
	// Max bounds an int or size knob, and a duration knob in nanoseconds; 0 leaves it unbounded.
	// A server limit that guards against a hostile client (grpc-go's streams) gets one, so no
	// scenario can lift it.
	Max   int64
	Enum  []string
	About string
	// Client marks a knob of the load tool's client rather than the server (ZeroMQ's pattern):
	// it has no Env, never reaches the server's environment or run.json's server knobs, and the
	// scenario hands it to the tool with the run.
	Client bool
}

// PatternKnob is the client knob that picks a target's pattern (Target.Patterns).
const PatternKnob = "pattern"

// patternKnob declares PatternKnob for a target with these patterns, the first being the default,
// so that its values are the patterns' names and nothing else.
func patternKnob(patterns []Pattern, about string) Knob {
	k := Knob{Kind: KnobEnum, Client: true, About: about}
	for _, p := range patterns {
		k.Enum = append(k.Enum, p.Name)
	}
	return k
}

// Pattern is a protocol variant a client picks (ZeroMQ's socket patterns).
type Pattern struct {
	Name    string
	Methods []string // the methods this pattern carries
	// Multiplexes is true when one socket carries many requests in flight.
	Multiplexes bool
	About       string
}

// Listener is a port a server opens beyond its main one (ZeroMQ's PULL and PUB).
type Listener struct {
	Name string // servertest.Endpoints key: pull, pub
	Env  string // the server's environment variable for its address
	Port int
}

// Caps are a target's default CPU quota (cores) and memory limit in the compose stack.
type Caps struct {
	CPUs        float64
	MemoryBytes int64
}

// Target is one server under test.
type Target struct {
	Name     string // scenario target, compose service, results and dashboard label
	GoName   string // its identifier in generated Go code (servertest's server names)
	Protocol string // one of Protocols: GRPC, HTTP, Connect, NetRPC or ZMQ
	About    string // one line for listings

	// ServerDir is the server's folder (its main, or its Dockerfile and sources).
	ServerDir string
	// GoServer is the Go package whose Spec (a serverkit.Spec) is the server; empty for servers in
	// other languages, which servertest runs as processes.
	GoServer string
	// Image is the logical image (internal/images) the server runs from; Entrypoint is the
	// program in it, or nil for the image's own.
	Image      string
	Entrypoint []string

	Port        int // the main listener, PROTOBENCH_LISTEN
	Listeners   []Listener
	MetricsPort int      // /metrics, /healthz and /config, PROTOBENCH_METRICS_LISTEN
	Health      []string // the compose healthcheck command (CMD form)
	// HealthRetries are 1 s probes before the server counts as failed to start.
	HealthRetries int

	Methods      []string  // contract methods (and MethodPublish where served)
	Patterns     []Pattern // client patterns; the first is the default
	HTTPVersions []string  // HTTP targets: what the server speaks; the first is the default
	Encodings    []string  // HTTP targets: body encodings; the first is the default
	Knobs        map[string]Knob
	Caps         Caps

	// AlsoSpeaks are further protocols the same server answers on the same port (connect-go
	// serves gRPC beside Connect). Each becomes a target of its own, named <name>-<protocol>, so
	// that a step, a tool and a result name the wire it measured; it runs the same server.
	AlsoSpeaks []string
	// SpeaksFor is, on such a derived target, the name of the entry it came from.
	SpeaksFor string

	// TLS says how the server terminates TLS when a step asks for it; nil: it cannot, and
	// NoTLS says why.
	TLS   *TLSSupport
	NoTLS string

	// Gzip says how the server compresses when a step asks for compression gzip; empty: it
	// cannot, and NoGzip says why. Under compression none (the default) no server compresses.
	Gzip   string
	NoGzip string
}

// TLSSupport is a target's TLS: the ALPN protocols it offers (PROTOBENCH_TLS_ALPN) and how.
type TLSSupport struct {
	ALPN  []string
	About string
}

// The environment a TLS server reads, and where the runner mounts the run's certificates (read
// only) in server and tool containers.
const (
	TLSCertEnv = "PROTOBENCH_TLS_CERT"
	TLSKeyEnv  = "PROTOBENCH_TLS_KEY"
	TLSALPNEnv = "PROTOBENCH_TLS_ALPN"
	TLSMount   = "/run/protobench/tls"
	// TLSDirEnv is the compose variable naming the host folder mounted at TLSMount in the
	// servers: the CA, the server certificate and its key.
	TLSDirEnv = "PROTOBENCH_TLS_DIR"
	// TLSCADirEnv names the host folder mounted at TLSMount in the tools: the CA alone.
	TLSCADirEnv = "PROTOBENCH_TLS_CA_DIR"
)

// TLSEnv is the server environment that turns TLS on, with certificates under dir (TLSMount in
// a container); nil for a target without TLS.
func (t Target) TLSEnv(dir string) map[string]string {
	if t.TLS == nil {
		return nil
	}
	return map[string]string{
		TLSCertEnv: dir + "/server.pem",
		TLSKeyEnv:  dir + "/server-key.pem",
		TLSALPNEnv: strings.Join(t.TLS.ALPN, ","),
	}
}

// TLSTargets names the targets that serve TLS, for error messages.
func TLSTargets() string {
	var names []string
	for _, t := range all {
		if t.TLS != nil {
			names = append(names, t.Name)
		}
	}
	return strings.Join(names, ", ")
}

// commonKnobs apply to every reference server.
var commonKnobs = map[string]Knob{
	"max_payload_bytes": {Env: "PROTOBENCH_MAX_PAYLOAD_BYTES", Kind: KnobSize, Min: 1, About: "largest request the server accepts (default 16 MiB); a step's payload may not exceed it"},
}

// goKnobs apply to every Go server (serverkit reads them).
var goKnobs = map[string]Knob{
	"handler_cpu": {Env: "PROTOBENCH_HANDLER_CPU", Kind: KnobDuration, Max: int64(time.Millisecond),
		About: "CPU time every request burns on top of its work, in integer rounds calibrated at start against the thread's CPU clock (0 to 1ms): a known slowdown for calibration, never for a real comparison"},
}

// httpKnobs are the transport knobs of the servers on serverkit's HTTP server (REST, Connect).
var httpKnobs = map[string]Knob{
	"idle_timeout":                 {Env: "PROTOBENCH_HTTP_IDLE_TIMEOUT", Kind: KnobDuration, About: "http.Server.IdleTimeout (default 2m; 0 means the default)"},
	"read_header_timeout":          {Env: "PROTOBENCH_HTTP_READ_HEADER_TIMEOUT", Kind: KnobDuration, About: "http.Server.ReadHeaderTimeout"},
	"http2_max_concurrent_streams": {Env: "PROTOBENCH_HTTP2_MAX_CONCURRENT_STREAMS", Kind: KnobInt, Min: 1, About: "h2c streams per connection (http.HTTP2Config.MaxConcurrentStreams, default 250)"},
}

// DefaultCaps are what a server gets in the compose stack when a scenario sets nothing.
var DefaultCaps = Caps{CPUs: 1, MemoryBytes: 1 << 30}

// DefaultMetricsPort is where every reference server serves /metrics.
const DefaultMetricsPort = 9100

var unary = []string{contract.MethodEcho, contract.MethodGetUser, contract.MethodMultiply, contract.MethodDivide}

// goServer fills the fields every Go server in the protobench image shares.
func goServer(t Target) Target {
	t.ServerDir = "servers/" + t.Name
	t.Image = "protobench"
	bin := "/usr/local/bin/protobench-" + t.Name + "-server"
	t.Entrypoint = []string{bin}
	t.Health = []string{bin, "--probe"}
	knobs := map[string]Knob{}
	for k, v := range goKnobs {
		knobs[k] = v
	}
	for k, v := range t.Knobs {
		knobs[k] = v
	}
	t.Knobs = knobs
	return t
}

// zmqPatterns are the ZeroMQ target's client patterns, which its pattern knob picks from.
var zmqPatterns = []Pattern{
	{Name: "dealer", Methods: unary, Multiplexes: true, About: "DEALER to ROUTER, requests pipelined on one socket"},
	{Name: "req", Methods: unary, About: "REQ to ROUTER, one request in flight per socket"},
	{Name: "push", Methods: []string{contract.MethodEcho}, Multiplexes: true, About: "PUSH raw payloads to PULL, counted at the sink"},
	{Name: "sub", Methods: []string{MethodPublish}, Multiplexes: true, About: "SUB to PUB: fan-out of Publish"},
}

// all is the registry, in the order listings use.
var all = []Target{
	goServer(Target{
		Name: "grpc", GoName: "GRPC", Protocol: GRPC, About: "Go gRPC (grpc-go)",
		GoServer: "internal/server/grpcserver", Port: 50051,
		Methods: append(slices.Clone(unary), contract.MethodEchoStream),
		TLS:     &TLSSupport{ALPN: []string{"h2"}, About: "crypto/tls in front of grpc-go (serverkit), ALPN h2"},
		Gzip:    "gRPC message compression: grpc-go's registered gzip codec inflates compressed requests and compresses each reply as its request was",
		Knobs: map[string]Knob{
			"max_concurrent_streams": {Env: "PROTOBENCH_GRPC_MAX_CONCURRENT_STREAMS", Kind: KnobInt, Min: 1, Max: 100000, About: "HTTP/2 streams per connection (grpc.MaxConcurrentStreams, default 1000)"},
			"read_buffer_bytes":      {Env: "PROTOBENCH_GRPC_READ_BUFFER_BYTES", Kind: KnobSize, About: "grpc-go's per-connection read buffer (grpc.ReadBufferSize)"},
			"write_buffer_bytes":     {Env: "PROTOBENCH_GRPC_WRITE_BUFFER_BYTES", Kind: KnobSize, About: "grpc-go's per-connection write buffer (grpc.WriteBufferSize)"},
			"stream_workers":         {Env: "PROTOBENCH_GRPC_STREAM_WORKERS", Kind: KnobInt, Min: 1, About: "goroutines that serve streams (grpc.NumStreamWorkers); unset: one per stream"},
			"fail_every":             {Env: "PROTOBENCH_GRPC_FAIL_EVERY", Kind: KnobInt, Min: 1, About: "a fault, to check a tool's count: every Nth unary call fails with Unavailable (in an HTTP 200, which h2load counts as a success); unset: none fail"},
		},
	}),
	goServer(Target{
		Name: "rest", GoName: "REST", Protocol: HTTP, About: "Go net/http REST, HTTP/1.1 and h2c, JSON and protobuf bodies",
		GoServer: "internal/server/restserver", Port: 8080,
		Methods:      slices.Clone(unary),
		HTTPVersions: []string{HTTP1, HTTP2},
		Encodings:    []string{EncodingJSON, EncodingProtobuf},
		Knobs:        httpKnobs,
		TLS:          &TLSSupport{ALPN: []string{"h2", "http/1.1"}, About: "crypto/tls (serverkit); ALPN picks HTTPS/2 or HTTPS/1.1"},
		Gzip:         "HTTP Content-Encoding: gzip request bodies inflated, every reply to a client whose Accept-Encoding names gzip compressed; under none a compressed body is refused with 415",
	}),
	goServer(Target{
		Name: "connect", GoName: "Connect", Protocol: Connect, About: "Go connect-go (connectrpc.com/connect) on net/http: Connect, gRPC and gRPC-Web, HTTP/1.1 and h2c",
		GoServer: "internal/server/connectserver", Port: 8081,
		Methods:      append(slices.Clone(unary), contract.MethodEchoStream),
		HTTPVersions: []string{HTTP1, HTTP2},
		Encodings:    []string{EncodingProtobuf, EncodingJSON},
		AlsoSpeaks:   []string{GRPC},
		Knobs:        httpKnobs,
		TLS:          &TLSSupport{ALPN: []string{"h2", "http/1.1"}, About: "crypto/tls (serverkit); ALPN picks HTTPS/2 (Connect, gRPC, gRPC-Web) or HTTPS/1.1 (Connect)"},
		Gzip:         "connect-go's gzip (gRPC message compression; Content-Encoding on Connect unary calls): requests inflated, every reply to a client that accepts gzip compressed",
	}),
	goServer(Target{
		Name: "netrpc", GoName: "NetRPC", Protocol: NetRPC, About: "Go net/rpc (gob)",
		GoServer: "internal/server/netrpcserver", Port: 4200,
		Methods: slices.Clone(unary),
		TLS:     &TLSSupport{About: "crypto/tls listener (serverkit), as tls.Listen; no ALPN"},
		NoGzip:  "net/rpc's gob codec has no compression",
	}),
	goServer(Target{
		Name: "zeromq", GoName: "ZeroMQ", Protocol: ZMQ, About: "Go on libzmq: ROUTER, PULL and PUB",
		GoServer: "internal/server/zmqserver", Port: 5555,
		Listeners: []Listener{
			{Name: "pull", Env: "PROTOBENCH_ZMQ_PULL_LISTEN", Port: 5556},
			{Name: "pub", Env: "PROTOBENCH_ZMQ_PUB_LISTEN", Port: 5557},
		},
		Methods:  append(slices.Clone(unary), MethodPublish),
		NoTLS:    "ZeroMQ has no TLS transport; its CURVE security (libzmq + libsodium) is a different handshake and cipher, not measured here (docs/tls.md)",
		Patterns: zmqPatterns,
		NoGzip:   "ZeroMQ frames carry no content encoding",
		Knobs: map[string]Knob{
			"sndhwm":     {Env: "PROTOBENCH_ZMQ_SNDHWM", Kind: KnobInt, About: "send high-water mark in messages (0 = unlimited)"},
			"rcvhwm":     {Env: "PROTOBENCH_ZMQ_RCVHWM", Kind: KnobInt, About: "receive high-water mark in messages (0 = unlimited)"},
			"io_threads": {Env: "PROTOBENCH_ZMQ_IO_THREADS", Kind: KnobInt, Min: 1, About: "libzmq I/O threads"},
			PatternKnob:  patternKnob(zmqPatterns, "the load tool's ZeroMQ socket pattern (default dealer); push needs method Echo, sub needs Publish"),
		},
	}),
	{
		Name: "python-grpc", GoName: "PythonGRPC", Protocol: GRPC, About: "Python gRPC (grpcio), sync or asyncio",
		ServerDir: "servers/python-grpc", Image: "python-grpc", Port: 50051,
		Health:        []string{"python3", "/app/server.py", "--probe"},
		HealthRetries: 90, // grpcio's import is slow on a capped core
		Methods:       append(slices.Clone(unary), contract.MethodEchoStream),
		TLS:           &TLSSupport{ALPN: []string{"h2"}, About: "grpc.ssl_server_credentials (gRPC core's TLS; ALPN h2)"},
		Gzip:          "gRPC core's gzip: requests inflated, every reply compressed (grpc.server(compression=Gzip))",
		Knobs: map[string]Knob{
			"mode":    {Env: "PROTOBENCH_PY_MODE", Kind: KnobEnum, Enum: []string{"sync", "aio"}, About: "thread-pool server (sync, the default) or asyncio server (aio)"},
			"threads": {Env: "PROTOBENCH_PY_THREADS", Kind: KnobInt, Min: 1, About: "thread-pool size in sync mode"},
		},
	},
}

func init() {
	all = withDerived(all)
	for i := range all {
		t := &all[i]
		if t.MetricsPort == 0 {
			t.MetricsPort = DefaultMetricsPort
		}
		if t.HealthRetries == 0 {
			t.HealthRetries = 60
		}
		if t.Caps == (Caps{}) {
			t.Caps = DefaultCaps
		}
		knobs := map[string]Knob{}
		for k, v := range commonKnobs {
			knobs[k] = v
		}
		for k, v := range t.Knobs {
			knobs[k] = v
		}
		t.Knobs = knobs
	}
}

// withDerived inserts, after each entry, a target for every protocol in its AlsoSpeaks: the same
// server, image, port and knobs, addressed in that protocol (no HTTP version or encoding of its
// own: gRPC fixes both).
func withDerived(entries []Target) []Target {
	var out []Target
	for _, t := range entries {
		out = append(out, t)
		for _, p := range t.AlsoSpeaks {
			d := t
			d.Name = t.Name + "-" + p
			d.GoName = t.GoName + strings.ToUpper(p)
			d.Protocol = p
			d.About = t.About + ", spoken to in " + p
			d.HTTPVersions, d.Encodings, d.AlsoSpeaks, d.SpeaksFor = nil, nil, nil, t.Name
			out = append(out, d)
		}
	}
	return out
}
