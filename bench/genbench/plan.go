package genbench

import (
	"path/filepath"
	"slices"
	"time"

	"github.com/protobench/protobench/internal/contract"
	"github.com/protobench/protobench/internal/targets"
	"github.com/protobench/protobench/internal/tlscert"
	"github.com/protobench/protobench/internal/tool"
	"github.com/protobench/protobench/internal/tool/native"
	// Every generator but protobench's own library row is a tool adapter.
	_ "github.com/protobench/protobench/internal/tool/all"
)

// ours is protobench's own generator: it runs against every protocol, and every ratio is its
// throughput over another generator's.
const ours = "protobench"

// generator is one row of the comparison: a tool adapter, run natively.
type generator struct {
	tool string // the adapter (internal/tool) that builds its command line and reads its output
	// libClient is true for protobench on the protocol's own client library (protocolSpec.libClient).
	libClient bool
	install   string // how to get the program when it is missing
}

// generators are the comparison's rows by name, and generatorNames their order in the table:
// protobench's generator on its own clients and on the protocols' client libraries, then every
// registered tool adapter that runs the closed model (the bench's one model), in the order of
// their names. A tool added to the registry joins the bench without an edit here.
var generators, generatorNames = generatorTable()

func generatorTable() (map[string]generator, []string) {
	gens := map[string]generator{ours: {tool: ours}, ours + "-lib": {tool: ours, libClient: true}}
	names := []string{ours, ours + "-lib"}
	for _, name := range tool.Names() {
		a, _ := tool.Lookup(name)
		c := a.Capabilities()
		if name == ours || !c.Runs("closed") {
			continue
		}
		gens[name] = generator{tool: name, install: native.Lookup(name).Install}
		names = append(names, name)
	}
	return gens, names
}

// protocolSpec is how one protocol's server is built and addressed.
type protocolSpec struct {
	server      string // folder under servers/, and the target's name
	scheme      string // the target's protocol (internal/targets)
	httpVersion string // over HTTP only: 1.1 or 2 (h2c)
	encoding    string // over HTTP only: json (the default) or protobuf
	extra       func(ports []int) []string
	// tls serves the row over TLS with the bench run's certificate (tls.go): every generator
	// trusts its CA, or skips verification where it has no CA option (h2load, wrk), and must
	// negotiate the row's ALPN protocol (alpn).
	tls bool
	// libClient selects protobench's client built on the protocol's own library instead of
	// its event-loop client (the protobench-lib row); empty when there is no such choice.
	libClient []string
}

var protocolSpecs = map[string]protocolSpec{
	"grpc": {server: "grpc", scheme: targets.GRPC, libClient: []string{"--grpc-client", "grpc-go"}},
	"http": {server: "rest", scheme: targets.HTTP, httpVersion: targets.HTTP1},
	"h2c":  {server: "rest", scheme: targets.HTTP, httpVersion: targets.HTTP2},
	// The same servers over TLS: gRPC (ALPN h2), REST over HTTPS/1.1 (http/1.1) and HTTPS/2 (h2,
	// as ALPN names HTTP/2 over TLS). Our generator's event loops carry TLS records themselves
	// (netloop/tls.go); protobench-lib is grpc-go's client over crypto/tls beside them.
	"grpc-tls": {server: "grpc", scheme: targets.GRPC, tls: true, extra: serverTLSFlags("grpc"), libClient: []string{"--grpc-client", "grpc-go"}},
	"https":    {server: "rest", scheme: targets.HTTP, httpVersion: targets.HTTP1, tls: true, extra: serverTLSFlags("rest")},
	"h2":       {server: "rest", scheme: targets.HTTP, httpVersion: targets.HTTP2, tls: true, extra: serverTLSFlags("rest")},
	// connect-go's server in its three wires: Connect over HTTP/1.1 and h2c (protobuf bodies, its
	// default), and gRPC, where our gRPC driver, ghz, h2load and k6 all run.
	"connect":      {server: "connect", scheme: targets.Connect, httpVersion: targets.HTTP1, encoding: targets.EncodingProtobuf},
	"connect-h2c":  {server: "connect", scheme: targets.Connect, httpVersion: targets.HTTP2, encoding: targets.EncodingProtobuf},
	"connect-grpc": {server: "connect", scheme: targets.GRPC, libClient: []string{"--grpc-client", "grpc-go"}},
	"netrpc":       {server: "netrpc", scheme: targets.NetRPC, libClient: []string{"--netrpc-client", "net/rpc"}},
	"zmq": {server: "zeromq", scheme: targets.ZMQ, libClient: []string{"--zmq-client", "libzmq"},
		extra: func(p []int) []string {
			return []string{"--pull-listen", "127.0.0.1:" + itoa(p[2]), "--pub-listen", "127.0.0.1:" + itoa(p[3])}
		}},
}

// protocolNames is the protocols' order in the table.
var protocolNames = []string{"grpc", "http", "h2c", "grpc-tls", "https", "h2", "connect", "connect-h2c", "connect-grpc", "netrpc", "zmq"}

// invocation is the step every generator runs against protocol's server at addr: GetUser,
// closed loop, the same requests in flight for all. A protocol that multiplexes spreads them
// over --grpc-connections connections; HTTP/1.1 carries one per connection, as wrk does. Each
// generator gets one CPU, its one pinned core (nativeArgs gives it one thread there).
func (o options) invocation(protocol, addr string, d time.Duration, rawDir, prefix string) tool.Invocation {
	spec := protocolSpecs[protocol]
	conns, conc := o.muxConns, o.inflight/o.muxConns
	inv := tool.Invocation{
		Target: spec.server, Address: addr, Scheme: spec.scheme, Method: contract.MethodGetUser, Model: "closed",
		Duration: d, RawDir: rawDir, RawPrefix: prefix,
	}
	if targets.OverHTTP[spec.scheme] {
		inv.HTTPVersion, inv.Encoding = spec.httpVersion, targets.EncodingJSON
		if spec.encoding != "" {
			inv.Encoding = spec.encoding
		}
		if spec.httpVersion == targets.HTTP1 {
			conns, conc = o.inflight, 1
		}
	}
	inv.Connections, inv.Concurrency = conns, conc
	if spec.tls {
		// The certificate names localhost; the generators that verify it (ours, ghz, k6) check
		// that name.
		inv.CAFile, inv.ServerName = filepath.Join(tlsDir(), tlscert.CAFile), "localhost"
	}
	return inv
}

// generatorsFor lists, in table order, the requested generators that can run protocol's step:
// the adapters' Check decides, so a new tool joins every protocol it speaks. Over TLS, the
// adapter must declare TLS (Capabilities.TLS), as a scenario's TLS step asks; Check sees the step
// without its CA, which is made only when the bench runs.
func (o options) generatorsFor(protocol string) []string {
	inv := o.invocation(protocol, "127.0.0.1:1", o.duration, "", "plan")
	overTLS := inv.CAFile != ""
	inv.CAFile, inv.ServerName = "", ""
	var out []string
	for _, name := range generatorNames {
		g := generators[name]
		a, ok := tool.Lookup(g.tool)
		switch {
		case !ok || !slices.Contains(o.tools, name):
		case g.libClient && protocolSpecs[protocol].libClient == nil:
		case overTLS && !a.Capabilities().TLS:
		case a.Check(inv) != nil:
		default:
			out = append(out, name)
		}
	}
	return out
}
