// Package genbench is `go run ./bench/cmd/bench-generators`: it runs the load generators side by side in
// one go, natively, each pinned to one core against the same real server pinned to another, and
// prints how they compare. It answers one question: is protobench's generator ever the
// bottleneck? If it is slower than the server it measures, every number it reports is wrong.
//
// For each protocol a fresh server (the real binary, built with go build) runs under
// `taskset -c <server core>` with GOMAXPROCS=1; then each generator runs under
// `taskset -c <client core>` with the same number of requests in flight: protobench's own (the
// protobench binary's `load`, built from the checkout unless given), ghz and h2load for gRPC, wrk for HTTP/1.1, h2load for
// h2c, k6 for gRPC and HTTP/1.1. Every generator runs with the command line its tool adapter
// (internal/tool) builds for a scenario step, and its output is read by the same adapter, so what
// is measured here is what the scenarios run. Every generator first gets a discarded warm-up run
// of its own. The table gives each one's throughput and the server CPU it drove (over the middle
// of the run, from /proc/<pid>/stat), then the ratios the load-generator issue asks for.
//
// The TLS rows (grpc-tls, https for HTTPS/1.1, h2 for HTTPS/2) are the same servers over TLS with
// a certificate made for the bench run (internal/tlscert). Every generator drives them with its
// adapter's TLS command line; afterwards the server's own handshake counter says what it
// negotiated, and a generator that took another ALPN protocol than the row's fails the row.
//
// The files: genbench.go (the command and its flags), plan.go (which generators meet which
// server, with which invocation), process.go (building, starting and pinning native processes),
// measure.go (one generator's measured run and its CPU figures), table.go (the report),
// memory.go (the memory mode) and tls.go (the TLS rows: their certificate, the servers' TLS flags,
// and the protocol each generator negotiated, as the server counted it).
//
// The memory mode (--memory-requests) runs protobench alone for that many requests and samples
// its resident set every second: it must stay flat, because the generator keeps histograms, not
// per-request records.
package genbench

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/protobench/protobench/bench/benchcli"
	"github.com/protobench/protobench/bench/internal/rounds"
)

type options struct {
	duration       time.Duration
	warmup         time.Duration
	inflight       int
	muxConns       int
	serverCore     int
	clientCore     int
	protocols      []string
	tools          []string
	protobench     string
	repo           string
	outDir         string
	memoryRequests int64
	repeats        int
}

// Command runs `go run ./bench/cmd/bench-generators` and returns the exit code: 0 when it ran (whatever
// the ratios), 1 when a run failed, 2 for bad flags.
func Command(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	return benchcli.Run("bench-generators", args, stderr, parseFlags, func(o options) error {
		return (&bench{o: o, stdout: stdout, stderr: stderr}).run(ctx)
	})
}

func parseFlags(args []string, stderr io.Writer) (options, error) {
	var o options
	fs := benchcli.FlagSet("bench-generators", stderr)
	fs.DurationVar(&o.duration, "duration", 5*time.Second, "measured run per generator")
	fs.DurationVar(&o.warmup, "warmup", time.Second, "discarded warm-up run of each generator before its measured run")
	fs.IntVar(&o.inflight, "concurrency", 64, "requests in flight for every generator")
	fs.IntVar(&o.muxConns, "grpc-connections", 4, "connections of the protocols that multiplex (gRPC, h2c, net/rpc, ZeroMQ), for every generator that can share one (k6 has one per VU)")
	fs.IntVar(&o.serverCore, "server-core", 0, "CPU the server is pinned to")
	fs.IntVar(&o.clientCore, "client-core", 1, "CPU every generator is pinned to")
	protocols := fs.String("protocols", strings.Join(protocolNames, ","), "protocols to run: "+strings.Join(protocolNames, ", "))
	tools := fs.String("tools", strings.Join(generatorNames, ","), "generators to run (protobench always runs; protobench-lib is protobench on the protocols' own client libraries: grpc-go, net/rpc, libzmq)")
	fs.StringVar(&o.protobench, "protobench", "", "protobench binary with the load subcommand (default: $PROTOBENCH_BIN, else built from ./cmd/protobench)")
	fs.StringVar(&o.repo, "repo", "", "protobench checkout holding servers/ (default: found from the working directory)")
	fs.StringVar(&o.outDir, "out", "", "keep every generator's raw output in this directory (default: a temporary one, removed)")
	fs.IntVar(&o.repeats, "repeats", 1, "measure each generator this many times and keep its best run (a busy machine only ever slows a run down)")
	fs.Int64Var(&o.memoryRequests, "memory-requests", 0, "instead of the comparison, run protobench alone for this many requests (e.g. 10000000) and sample its memory")
	fs.Usage = func() {
		fmt.Fprintln(fs.Output(), "usage: bench-generators [flags]")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return o, err
	}
	if fs.NArg() > 0 {
		return o, fmt.Errorf("unexpected argument %q", fs.Arg(0))
	}
	switch {
	case o.duration < 2*time.Second:
		return o, fmt.Errorf("--duration must be at least 2s (server CPU is taken over the middle of the run), got %s", o.duration)
	case o.warmup < 0:
		return o, fmt.Errorf("--warmup must not be negative, got %s", o.warmup)
	case o.inflight < 1:
		return o, fmt.Errorf("--concurrency must be at least 1, got %d", o.inflight)
	case o.muxConns < 1 || o.inflight%o.muxConns != 0:
		return o, fmt.Errorf("--grpc-connections must be at least 1 and divide --concurrency (%d), got %d", o.inflight, o.muxConns)
	case o.serverCore < 0 || o.clientCore < 0 || o.serverCore == o.clientCore:
		return o, fmt.Errorf("--server-core and --client-core must be two different CPUs, got %d and %d", o.serverCore, o.clientCore)
	case o.repeats < 1:
		return o, fmt.Errorf("--repeats must be at least 1, got %d", o.repeats)
	case o.memoryRequests < 0:
		return o, fmt.Errorf("--memory-requests must not be negative, got %d", o.memoryRequests)
	}
	for _, p := range strings.Split(*protocols, ",") {
		if _, ok := protocolSpecs[p]; !ok {
			return o, fmt.Errorf("--protocols: %q is not one of %s", p, strings.Join(protocolNames, ", "))
		}
		o.protocols = append(o.protocols, p)
	}
	o.tools = []string{ours}
	for _, t := range strings.Split(*tools, ",") {
		if _, ok := generators[t]; !ok {
			return o, fmt.Errorf("--tools: %q is not one of %s", t, strings.Join(generatorNames, ", "))
		}
		if t != ours {
			o.tools = append(o.tools, t)
		}
	}
	return o, nil
}

type bench struct {
	o      options
	stdout io.Writer
	stderr io.Writer
	repo   string
	binDir string
	rawDir string
	tools  map[string]string // generator -> executable
}

func (b *bench) run(ctx context.Context) error {
	if err := b.locateTools(); err != nil {
		return err
	}
	tmp, err := os.MkdirTemp("", "protobench-genbench-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	if err := b.build(ctx, tmp); err != nil {
		return err
	}
	if b.o.memoryRequests > 0 {
		return b.memory(ctx)
	}
	caFingerprint := ""
	if b.o.anyTLS() {
		fp, remove, err := makeCerts()
		if err != nil {
			return err
		}
		defer remove()
		caFingerprint = fp
	}
	b.printHeader(caFingerprint)
	var ms []measurement
	for _, p := range b.o.protocols {
		best, err := b.measureProtocol(ctx, p)
		if err != nil {
			return err
		}
		ms = append(ms, best...)
	}
	report(b.stdout, ms)
	if n := countFailed(ms); n > 0 {
		return fmt.Errorf("%d of %d runs failed (see above)", n, len(ms))
	}
	return nil
}

// build makes the bench's folders under tmp (the raw one there unless --out names one) and
// builds the servers and protobench into tmp.
func (b *bench) build(ctx context.Context, tmp string) error {
	b.binDir = tmp
	b.rawDir = b.o.outDir
	if b.rawDir == "" {
		b.rawDir = filepath.Join(tmp, "raw")
	}
	if err := os.MkdirAll(b.rawDir, 0o755); err != nil {
		return err
	}
	if err := b.buildServers(ctx); err != nil {
		return err
	}
	return b.buildProtobench(ctx)
}

// printHeader says what the comparison runs with, before its table; caFingerprint is the TLS
// rows' CA, empty when there are none.
func (b *bench) printHeader(caFingerprint string) {
	fmt.Fprintf(b.stdout, "bench-generators: server on CPU %d (GOMAXPROCS=1), each generator on CPU %d, %d requests in flight, %s per run (after a %s warm-up run), best of %d\n",
		b.o.serverCore, b.o.clientCore, b.o.inflight, b.o.duration, b.o.warmup, b.o.repeats)
	if la, err := os.ReadFile("/proc/loadavg"); err == nil {
		fmt.Fprintf(b.stdout, "load average at start: %s\n", strings.Join(strings.Fields(string(la))[:3], " "))
	}
	if caFingerprint != "" {
		fmt.Fprintf(b.stdout, "TLS rows: a certificate made for this run (ECDSA P-256, CA SHA-256 %s…), each server offering its registry entry's ALPN\n", caFingerprint[:16])
	}
	fmt.Fprintln(b.stdout)
}

// measureProtocol measures every found generator that can run protocol's step, --repeats times
// round robin, and keeps each one's best run; an error only when ctx ends.
func (b *bench) measureProtocol(ctx context.Context, protocol string) ([]measurement, error) {
	var gens []string
	for _, g := range b.o.generatorsFor(protocol) {
		if _, ok := b.tools[g]; ok {
			gens = append(gens, g)
		}
	}
	best, err := rounds.Best(ctx, b.stderr, protocol, gens, b.o.repeats,
		func(g string) measurement { return b.measure(ctx, protocol, g) },
		func(m measurement) error { return m.err },
		func(got, kept measurement) bool { return got.rps > kept.rps })
	if err != nil {
		return nil, err
	}
	for i := range best {
		best[i].repeats = b.o.repeats
	}
	return best, nil
}

// anyTLS reports whether a requested protocol runs over TLS, and so needs the run's certificate.
func (o options) anyTLS() bool {
	for _, p := range o.protocols {
		if protocolSpecs[p].tls {
			return true
		}
	}
	return false
}

func countFailed(ms []measurement) int {
	n := 0
	for _, m := range ms {
		if m.err != nil {
			n++
		}
	}
	return n
}
