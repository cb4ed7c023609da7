// Package churnbench is `go run ./bench/cmd/bench-churn`: the lab bench that sets our
// generator's connection churn beside two independent tools on one server, both pinned alike.
// It answers: when a step churns connections (--requests-per-connection 1), is the figure the
// server's, or the client's?
//
// One REST server (the real binary) runs pinned to the server core with GOMAXPROCS=1; each
// generator runs pinned to the client core, with the same connections at once:
//
//   - tls-full, tls-resumed: a new TLS connection (HTTPS/1.1) for every GET. Ours beside
//     `openssl s_time -new` (full handshakes) or `-reuse` (resumed), one s_time process per
//     connection at once, since s_time opens one connection at a time.
//   - http: a new cleartext connection for every GET. Ours beside `wrk -H 'Connection: close'`,
//     for which the server closes after each response and wrk reconnects.
//
// Each run reports connections a second (the generator's own count over its own wall time),
// the server's CPU (from /proc over the run) and the generator's (its rusage) per connection,
// and the handshakes the server counted, full and resumed, with the key exchange it negotiated:
// ours runs with GODEBUG=tlsmlkem=0 so that it offers X25519 first, as OpenSSL 3.0 does; the
// bench prints what was negotiated, and fails a TLS row whose generators did not agree on it.
//
// The files: churnbench.go (the command, its flags, the runs), tools.go (each generator's
// command line and how its output is read), report.go (the table and the checks).
package churnbench

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/protobench/protobench/bench/benchcli"
	"github.com/protobench/protobench/bench/internal/hostproc"
	"github.com/protobench/protobench/bench/internal/rounds"
	"github.com/protobench/protobench/internal/repo"
	"github.com/protobench/protobench/internal/tlscert"
)

// busyLoad is the load average above which the bench warns that its figures are the host's.
const busyLoad = 1.5

// Rows are the comparisons, in table order.
var Rows = []string{"tls-full", "tls-resumed", "http"}

type options struct {
	duration   time.Duration
	inflight   int
	serverCore int
	clientCore int
	tlsVersion string
	repeats    int
	rows       []string
	protobench string
	repo       string
	outDir     string
}

// Command runs the bench and returns the exit code: 0 when it ran (whatever the checks), 1 when a
// run failed, 2 for bad flags.
func Command(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	return benchcli.Run("bench-churn", args, stderr, parseFlags, func(o options) error {
		return (&bench{o: o, stdout: stdout, stderr: stderr}).run(ctx)
	})
}

func parseFlags(args []string, stderr io.Writer) (options, error) {
	var o options
	fs := benchcli.FlagSet("bench-churn", stderr)
	fs.DurationVar(&o.duration, "duration", 5*time.Second, "measured run per generator")
	fs.IntVar(&o.inflight, "connections", 8, "connections at once for every generator (s_time: that many processes)")
	fs.IntVar(&o.serverCore, "server-core", 0, "CPU the server is pinned to")
	fs.IntVar(&o.clientCore, "client-core", 1, "CPU every generator is pinned to")
	fs.StringVar(&o.tlsVersion, "tls-version", "1.3", "TLS version of the TLS rows: 1.3 or 1.2")
	fs.IntVar(&o.repeats, "repeats", 1, "measure each generator this many times, round robin, and keep its best run")
	rows := fs.String("rows", strings.Join(Rows, ","), "rows to run: "+strings.Join(Rows, ", "))
	fs.StringVar(&o.protobench, "protobench", "", "protobench binary (default: $PROTOBENCH_BIN, else built from ./cmd/protobench)")
	fs.StringVar(&o.repo, "repo", "", "protobench checkout holding servers/ (default: found from the working directory)")
	fs.StringVar(&o.outDir, "out", "", "keep every generator's raw output in this directory (default: a temporary one, removed)")
	if err := fs.Parse(args); err != nil {
		return o, err
	}
	if fs.NArg() > 0 {
		return o, fmt.Errorf("unexpected argument %q", fs.Arg(0))
	}
	switch {
	case o.duration < 2*time.Second:
		return o, fmt.Errorf("--duration must be at least 2s (openssl s_time counts whole seconds), got %s", o.duration)
	case o.inflight < 1:
		return o, fmt.Errorf("--connections must be at least 1, got %d", o.inflight)
	case o.serverCore < 0 || o.clientCore < 0 || o.serverCore == o.clientCore:
		return o, fmt.Errorf("--server-core and --client-core must be two different CPUs, got %d and %d", o.serverCore, o.clientCore)
	case o.tlsVersion != "1.3" && o.tlsVersion != "1.2":
		return o, fmt.Errorf("--tls-version must be 1.3 or 1.2, got %q", o.tlsVersion)
	case o.repeats < 1:
		return o, fmt.Errorf("--repeats must be at least 1, got %d", o.repeats)
	}
	for _, r := range strings.Split(*rows, ",") {
		if _, ok := rowGenerators[r]; !ok {
			return o, fmt.Errorf("--rows: %q is not one of %s", r, strings.Join(Rows, ", "))
		}
		o.rows = append(o.rows, r)
	}
	return o, nil
}

type bench struct {
	o      options
	stdout io.Writer
	stderr io.Writer
	binDir string // the server (rest) and, unless given, protobench
	rawDir string
	tlsDir string
	tools  map[string]string // generator -> executable
}

func (b *bench) run(ctx context.Context) error {
	if err := hostproc.CheckTaskset(); err != nil {
		return err
	}
	tmp, err := os.MkdirTemp("", "protobench-churnbench-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	b.binDir, b.tlsDir, b.rawDir = tmp, filepath.Join(tmp, "tls"), b.o.outDir
	if b.rawDir == "" {
		b.rawDir = filepath.Join(tmp, "raw")
	}
	if err := os.MkdirAll(b.rawDir, 0o755); err != nil {
		return err
	}
	if err := b.build(ctx); err != nil {
		return err
	}
	if _, err := tlscert.Generate(b.tlsDir, tlscert.Options{}); err != nil {
		return err
	}
	fmt.Fprintf(b.stdout, "bench-churn: REST server on CPU %d (GOMAXPROCS=1), each generator on CPU %d, %d connections at once, a new connection per request, TLS %s, %s per run, best of %d\n",
		b.o.serverCore, b.o.clientCore, b.o.inflight, b.o.tlsVersion, b.o.duration, b.o.repeats)
	if la, err := os.ReadFile("/proc/loadavg"); err == nil {
		f := strings.Fields(string(la))
		fmt.Fprintf(b.stdout, "load average at start: %s\n", strings.Join(f[:3], " "))
		if l, err := strconv.ParseFloat(f[0], 64); err == nil && l > busyLoad {
			// s_time runs one process per connection, ours one: on a busy core the scheduler
			// gives the many processes many shares, and the comparison measures that.
			fmt.Fprintf(b.stdout, "WARNING: a busy host (load above %.1f): the witnesses' processes outnumber ours, and the scheduler's shares decide the figures\n", busyLoad)
		}
	}
	fmt.Fprintln(b.stdout)
	var ms []measurement
	for _, row := range b.o.rows {
		best, err := rounds.Best(ctx, b.stderr, row, b.available(row), b.o.repeats,
			func(g string) measurement { return b.measure(ctx, row, g) },
			func(m measurement) error { return m.err },
			func(got, kept measurement) bool { return got.connRate > kept.connRate })
		if err != nil {
			return err
		}
		ms = append(ms, best...)
	}
	report(b.stdout, ms)
	for _, m := range ms {
		if m.err != nil {
			return fmt.Errorf("%s with %s failed (see above)", m.row, m.tool)
		}
	}
	return nil
}

// build compiles the REST server, and protobench unless given, from the checkout; it finds
// openssl and wrk on PATH and skips a row's tool that is missing, saying how to install it.
func (b *bench) build(ctx context.Context) error {
	root := b.o.repo
	if root == "" {
		r, err := repo.Root()
		if err != nil {
			return fmt.Errorf("%v (or give --repo)", err)
		}
		root = r
	}
	if err := hostproc.Build(ctx, root, "./servers/rest", filepath.Join(b.binDir, "rest")); err != nil {
		return err
	}
	b.tools = map[string]string{}
	self := b.o.protobench
	if self == "" {
		self = os.Getenv("PROTOBENCH_BIN")
	}
	if self == "" {
		self = filepath.Join(b.binDir, ours)
		if err := hostproc.Build(ctx, root, "./cmd/protobench", self); err != nil {
			return fmt.Errorf("give --protobench, or fix the build: %w", err)
		}
	}
	b.tools[ours] = self
	b.findTools()
	return nil
}
