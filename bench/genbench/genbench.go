// Package genbench is `protobench bench-generators`: it runs the load generators side by side in
// one go, natively, each pinned to one core against the same real server pinned to another, and
// prints how they compare. It answers one question: is protobench's generator ever the
// bottleneck? If it is slower than the server it measures, every number it reports is wrong.
//
// For each protocol a fresh server (the real binary, built with go build) runs under
// `taskset -c <server core>` with GOMAXPROCS=1; then each generator runs under
// `taskset -c <client core>` with the same number of requests in flight: protobench's own (the
// binary running this command, `load`), ghz for gRPC, wrk for HTTP, k6 for both. Every generator
// first gets a discarded warm-up run of its own. The table gives each one's throughput and the
// server CPU it drove (over the middle of the run, from /proc/<pid>/stat), then the ratios the
// load-generator issue asks for.
//
// The memory mode (--memory-requests) runs protobench alone for that many requests and samples
// its resident set every second: it must stay flat, because the generator keeps histograms, not
// per-request records.
package genbench

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"github.com/protobench/protobench/internal/repo"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"text/tabwriter"
	"time"

	pbtool "github.com/protobench/protobench/internal/tool" // its own names use "tool" for a generator name
)

// Targets from the load-generator issue.
const (
	TargetVsGHZ     = 1.4  // protobench ≥ 1.4 × ghz, gRPC GetUser
	TargetVsWrk     = 0.9  // protobench ≥ 0.9 × wrk, HTTP GET GetUser
	TargetVsK6      = 3.0  // protobench ≥ 3 × k6, both
	TargetServerCPU = 95.0 // % of the server's one core, every protocol
)

// Install commands for the external generators, pinned as DESIGN.md says.
var installHints = map[string]string{
	"ghz": "go install github.com/bojand/ghz/cmd/ghz@v0.120.0",
	"k6":  "go install go.k6.io/k6@v1.8.1",
	"wrk": "apt-get install wrk",
}

type options struct {
	duration       time.Duration
	warmup         time.Duration
	inflight       int
	grpcConns      int
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

// Command runs `protobench bench-generators` and returns the exit code: 0 when it ran (whatever
// the ratios), 1 when a run failed, 2 for bad flags.
func Command(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	o, err := parseFlags(args, stderr)
	if err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		fmt.Fprintf(stderr, "protobench bench-generators: %v\n", err)
		return 2
	}
	b := &bench{o: o, stdout: stdout, stderr: stderr}
	if err := b.run(ctx); err != nil {
		fmt.Fprintf(stderr, "protobench bench-generators: %v\n", err)
		return 1
	}
	return 0
}

func parseFlags(args []string, stderr io.Writer) (options, error) {
	var o options
	fs := flag.NewFlagSet("protobench bench-generators", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.DurationVar(&o.duration, "duration", 5*time.Second, "measured run per generator")
	fs.DurationVar(&o.warmup, "warmup", time.Second, "discarded warm-up run of each generator before its measured run")
	fs.IntVar(&o.inflight, "concurrency", 64, "requests in flight for every generator")
	fs.IntVar(&o.grpcConns, "grpc-connections", 4, "gRPC connections (protobench and ghz; k6 has one per VU)")
	fs.IntVar(&o.serverCore, "server-core", 0, "CPU the server is pinned to")
	fs.IntVar(&o.clientCore, "client-core", 1, "CPU every generator is pinned to")
	protocols := fs.String("protocols", "grpc,http,netrpc,zmq", "protocols to run: grpc, http, netrpc, zmq")
	tools := fs.String("tools", "protobench,protobench-lib,ghz,wrk,k6", "generators to run (protobench always runs; protobench-lib is protobench on the protocols' own client libraries: grpc-go, net/rpc, libzmq)")
	fs.StringVar(&o.protobench, "protobench", "", "protobench binary with the load subcommand (default: this executable)")
	fs.StringVar(&o.repo, "repo", "", "protobench checkout holding servers/ (default: found from the working directory)")
	fs.StringVar(&o.outDir, "out", "", "keep every generator's raw output in this directory (default: a temporary one, removed)")
	fs.IntVar(&o.repeats, "repeats", 1, "measure each generator this many times and keep its best run (a busy machine only ever slows a run down)")
	fs.Int64Var(&o.memoryRequests, "memory-requests", 0, "instead of the comparison, run protobench alone for this many requests (e.g. 10000000) and sample its memory")
	fs.Usage = func() {
		fmt.Fprintln(fs.Output(), "usage: protobench bench-generators [flags]")
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
	case o.grpcConns < 1 || o.inflight%o.grpcConns != 0:
		return o, fmt.Errorf("--grpc-connections must be at least 1 and divide --concurrency (%d), got %d", o.inflight, o.grpcConns)
	case o.serverCore < 0 || o.clientCore < 0 || o.serverCore == o.clientCore:
		return o, fmt.Errorf("--server-core and --client-core must be two different CPUs, got %d and %d", o.serverCore, o.clientCore)
	case o.repeats < 1:
		return o, fmt.Errorf("--repeats must be at least 1, got %d", o.repeats)
	case o.memoryRequests < 0:
		return o, fmt.Errorf("--memory-requests must not be negative, got %d", o.memoryRequests)
	}
	for _, p := range strings.Split(*protocols, ",") {
		if _, ok := protocolSpecs[p]; !ok {
			return o, fmt.Errorf("--protocols: %q is not one of grpc, http, netrpc, zmq", p)
		}
		o.protocols = append(o.protocols, p)
	}
	o.tools = []string{"protobench"}
	for _, t := range strings.Split(*tools, ",") {
		switch t {
		case "protobench":
		case "protobench-lib", "ghz", "wrk", "k6":
			o.tools = append(o.tools, t)
		default:
			return o, fmt.Errorf("--tools: %q is not one of protobench, protobench-lib, ghz, wrk, k6", t)
		}
	}
	return o, nil
}

// protocolSpec is how one protocol's server is built and addressed.
type protocolSpec struct {
	server string // folder under servers/
	scheme string // protobench --target scheme
	extra  func(ports []int) []string
	tools  []string // other generators that speak it
	// libClient selects protobench's client built on the protocol's own library instead of
	// its event-loop client (the protobench-lib row); empty when there is no such choice.
	libClient []string
}

var protocolSpecs = map[string]protocolSpec{
	"grpc":   {server: "grpc", scheme: "grpc", tools: []string{"protobench-lib", "ghz", "k6"}, libClient: []string{"--grpc-client", "grpc-go"}},
	"http":   {server: "rest", scheme: "http", tools: []string{"wrk", "k6"}},
	"netrpc": {server: "netrpc", scheme: "netrpc", tools: []string{"protobench-lib"}, libClient: []string{"--netrpc-client", "net/rpc"}},
	"zmq": {server: "zeromq", scheme: "zmq", tools: []string{"protobench-lib"}, libClient: []string{"--zmq-client", "libzmq"},
		extra: func(p []int) []string {
			return []string{"--pull-listen", "127.0.0.1:" + strconv.Itoa(p[2]), "--pub-listen", "127.0.0.1:" + strconv.Itoa(p[3])}
		}},
}

// measurement is one generator's measured run.
type measurement struct {
	protocol     string
	tool         string
	rps          float64
	serverCPU    float64 // % of one core
	clientCPU    float64 // the generator's CPU, % of one core
	serverUS     float64 // server CPU per request, µs
	clientUS     float64 // generator CPU per request, µs
	serverOther  float64 // % of the server's core used by other processes: a busy machine
	clientOther  float64 // the same on the generator's core, beside the generator
	p50ms, p99ms float64
	errors       int64
	err          error
	repeats      int
}

type bench struct {
	o      options
	stdout io.Writer
	stderr io.Writer
	binDir string
	rawDir string
	tools  map[string]string // tool -> executable
}

func (b *bench) run(ctx context.Context) error {
	if _, err := exec.LookPath("taskset"); err != nil {
		return errors.New("taskset not found (Debian package util-linux): it pins the server and the generators to their cores")
	}
	if err := b.locateTools(); err != nil {
		return err
	}
	tmp, err := os.MkdirTemp("", "protobench-genbench-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
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
	if b.o.memoryRequests > 0 {
		return b.memory(ctx)
	}

	fmt.Fprintf(b.stdout, "protobench bench-generators: server on CPU %d (GOMAXPROCS=1), each generator on CPU %d, %d requests in flight, %s per run (after a %s warm-up run), best of %d\n",
		b.o.serverCore, b.o.clientCore, b.o.inflight, b.o.duration, b.o.warmup, b.o.repeats)
	if la, err := os.ReadFile("/proc/loadavg"); err == nil {
		fmt.Fprintf(b.stdout, "load average at start: %s\n", strings.Join(strings.Fields(string(la))[:3], " "))
	}
	fmt.Fprintln(b.stdout)
	var ms []measurement
	for _, p := range b.o.protocols {
		spec := protocolSpecs[p]
		var tools []string
		for _, t := range append([]string{"protobench"}, spec.tools...) {
			if _, ok := b.tools[t]; ok {
				tools = append(tools, t)
			}
		}
		// Repeats go round the generators (A B C A B C ...), not one generator's repeats in a
		// row: on a shared or virtual machine the server's cost per request drifts over minutes,
		// and a block of runs would hand one generator the good minutes.
		best := make([]measurement, len(tools))
		for r := 0; r < b.o.repeats; r++ {
			for i, t := range tools {
				got := b.measure(ctx, p, t)
				if got.err != nil {
					fmt.Fprintf(b.stderr, "%s with %s: %v\n", p, t, got.err)
				}
				if r == 0 || (got.err == nil && (best[i].err != nil || got.rps > best[i].rps)) {
					best[i] = got
				}
				if ctx.Err() != nil {
					return ctx.Err()
				}
			}
		}
		for i := range best {
			best[i].repeats = b.o.repeats
		}
		ms = append(ms, best...)
	}
	b.report(ms)
	for _, m := range ms {
		if m.err != nil {
			return fmt.Errorf("%d of %d runs failed (see above)", countFailed(ms), len(ms))
		}
	}
	return nil
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

// locateTools finds every requested generator; a missing external one is skipped with the
// command that installs it.
func (b *bench) locateTools() error {
	b.tools = map[string]string{}
	self := b.o.protobench
	if self == "" {
		exe, err := os.Executable()
		if err != nil {
			return fmt.Errorf("cannot find this executable (give --protobench): %v", err)
		}
		self = exe
	}
	b.tools["protobench"] = self
	gobin := filepath.Join(os.Getenv("HOME"), "go", "bin")
	if v := os.Getenv("GOBIN"); v != "" {
		gobin = v
	} else if v := os.Getenv("GOPATH"); v != "" {
		gobin = filepath.Join(strings.Split(v, ":")[0], "bin")
	}
	for _, t := range b.o.tools[1:] {
		if t == "protobench-lib" {
			b.tools[t] = self
			continue
		}
		path, err := exec.LookPath(t)
		if err != nil {
			if p := filepath.Join(gobin, t); isExecutable(p) {
				path, err = p, nil
			}
		}
		if err != nil {
			fmt.Fprintf(b.stderr, "protobench bench-generators: %s not found, skipping it (install: %s)\n", t, installHints[t])
			continue
		}
		b.tools[t] = path
	}
	return nil
}

func isExecutable(p string) bool {
	st, err := os.Stat(p)
	return err == nil && !st.IsDir() && st.Mode()&0o111 != 0
}

// buildServers builds the real server binaries the protocols need.
func (b *bench) buildServers(ctx context.Context) error {
	root := b.o.repo
	if root == "" {
		r, err := repo.Root()
		if err != nil {
			return err
		}
		root = r
	}
	seen := map[string]bool{}
	protocols := b.o.protocols
	if b.o.memoryRequests > 0 {
		protocols = []string{"http"}
	}
	for _, p := range protocols {
		s := protocolSpecs[p].server
		if seen[s] {
			continue
		}
		seen[s] = true
		cmd := exec.CommandContext(ctx, "go", "build", "-o", filepath.Join(b.binDir, s), "./servers/"+s)
		cmd.Dir = root
		if out, err := cmd.CombinedOutput(); err != nil {
			return fmt.Errorf("go build ./servers/%s: %v\n%s", s, err, out)
		}
	}
	return nil
}

// server is a running server process.
type server struct {
	cmd     *exec.Cmd
	exited  chan struct{}
	addr    string // protocol address
	metrics string // metrics host:port
}

// startServer starts a fresh server pinned to the server core with GOMAXPROCS=1.
func (b *bench) startServer(ctx context.Context, protocol string) (*server, error) {
	spec := protocolSpecs[protocol]
	ports, err := freePorts(4)
	if err != nil {
		return nil, err
	}
	s := &server{addr: "127.0.0.1:" + strconv.Itoa(ports[0]), metrics: "127.0.0.1:" + strconv.Itoa(ports[1])}
	args := []string{"-c", strconv.Itoa(b.o.serverCore), filepath.Join(b.binDir, spec.server), "--listen", s.addr, "--metrics-listen", s.metrics}
	if spec.extra != nil {
		args = append(args, spec.extra(ports)...)
	}
	s.cmd = exec.Command("taskset", args...)
	s.cmd.Env = append(os.Environ(), "GOMAXPROCS=1")
	logFile, err := os.Create(filepath.Join(b.rawDir, protocol+"-server.log"))
	if err != nil {
		return nil, err
	}
	s.cmd.Stdout, s.cmd.Stderr = logFile, logFile
	if err := s.cmd.Start(); err != nil {
		logFile.Close()
		return nil, err
	}
	s.exited = make(chan struct{})
	go func() {
		_ = s.cmd.Wait()
		logFile.Close()
		close(s.exited)
	}()
	deadline := time.Now().Add(20 * time.Second)
	for {
		resp, err := http.Get("http://" + s.metrics + "/healthz")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return s, nil
			}
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			s.stop()
			return nil, fmt.Errorf("%s server not healthy on %s within 20s (log: %s)", protocol, s.metrics, logFile.Name())
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func (s *server) stop() {
	_ = s.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-s.exited:
	case <-time.After(5 * time.Second):
		_ = s.cmd.Process.Kill()
		<-s.exited
	}
}

// cpuSeconds is a process's user+system CPU time from /proc/<pid>/stat.
func cpuSeconds(pid int) (float64, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, err
	}
	// The command name (field 2) may hold spaces; the fields after its ")" are fixed.
	s := string(b)
	f := strings.Fields(s[strings.LastIndexByte(s, ')')+2:])
	if len(f) < 13 {
		return 0, fmt.Errorf("short /proc/%d/stat", pid)
	}
	utime, _ := strconv.ParseFloat(f[11], 64)
	stime, _ := strconv.ParseFloat(f[12], 64)
	return (utime + stime) / clockTicks, nil
}

// clockTicks is USER_HZ, 100 on every Linux architecture Go supports.
const clockTicks = 100

func freePorts(n int) ([]int, error) {
	var ports []int
	var lns []net.Listener
	defer func() {
		for _, l := range lns {
			l.Close()
		}
	}()
	for i := 0; i < n; i++ {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, err
		}
		lns = append(lns, l)
		ports = append(ports, l.Addr().(*net.TCPAddr).Port)
	}
	return ports, nil
}

// measure runs one generator against a fresh server: a warm-up run, then the measured run with
// the server's CPU sampled over its middle.
func (b *bench) measure(ctx context.Context, protocol, tool string) measurement {
	m := measurement{protocol: protocol, tool: tool}
	srv, err := b.startServer(ctx, protocol)
	if err != nil {
		m.err = err
		return m
	}
	defer srv.stop()
	fmt.Fprintf(b.stderr, "running %s against the %s server ...\n", tool, protocol)
	if b.o.warmup > 0 {
		if _, err := b.runTool(ctx, protocol, tool, srv, b.o.warmup, "warmup"); err != nil {
			m.err = fmt.Errorf("warm-up: %w", err)
			return m
		}
	}
	type cpuSample struct {
		server, generator, serverCore, clientCore float64
		at                                        time.Time
	}
	pids := make(chan int, 1)
	sample := func(gen int) cpuSample {
		s, _ := cpuSeconds(srv.cmd.Process.Pid)
		g, _ := cpuSeconds(gen)
		return cpuSample{server: s, generator: g, serverCore: coreBusySeconds(b.o.serverCore), clientCore: coreBusySeconds(b.o.clientCore), at: time.Now()}
	}
	samples := make(chan cpuSample, 2)
	go func() {
		gen := <-pids
		// Skip the first second (start-up: k6 compiles its script, connections open) and the
		// last half second (wind-down).
		time.Sleep(time.Second)
		samples <- sample(gen)
		time.Sleep(b.o.duration - 1500*time.Millisecond)
		samples <- sample(gen)
	}()
	res, err := b.runTool(ctx, protocol, tool, srv, b.o.duration, "run", func(pid int) { pids <- pid })
	if err != nil && len(pids) == 0 {
		pids <- 0 // the generator never started; let the sampler finish
	}
	s0, s1 := <-samples, <-samples
	if err != nil {
		m.err = err
		return m
	}
	m.rps, m.p50ms, m.p99ms, m.errors, m.clientCPU = res.rps, res.p50ms, res.p99ms, res.errors, res.clientCPU
	if span := s1.at.Sub(s0.at).Seconds(); span > 0 {
		m.serverCPU = 100 * (s1.server - s0.server) / span
		m.clientCPU = 100 * (s1.generator - s0.generator) / span
		m.serverOther = max(0, 100*(s1.serverCore-s0.serverCore)/span-m.serverCPU)
		m.clientOther = max(0, 100*(s1.clientCore-s0.clientCore)/span-m.clientCPU)
		if m.rps > 0 {
			// CPU per request is what decides who saturates first on equal cores, and
			// competition for the cores changes it far less than it changes throughput.
			m.serverUS = m.serverCPU / 100 * 1e6 / m.rps
			m.clientUS = m.clientCPU / 100 * 1e6 / m.rps
		}
	}
	return m
}

// coreBusySeconds is how long a CPU has been busy (not idle, not waiting for I/O), from
// /proc/stat.
func coreBusySeconds(cpu int) float64 {
	b, err := os.ReadFile("/proc/stat")
	if err != nil {
		return 0
	}
	prefix := "cpu" + strconv.Itoa(cpu) + " "
	for _, line := range strings.Split(string(b), "\n") {
		if !strings.HasPrefix(line, prefix) {
			continue
		}
		var busy float64
		for i, f := range strings.Fields(line)[1:] {
			v, _ := strconv.ParseFloat(f, 64)
			if i != 3 && i != 4 && i < 8 { // skip idle and iowait; guest time is counted in user
				busy += v
			}
		}
		return busy / clockTicks
	}
	return 0
}

// toolResult is what a generator reported.
type toolResult struct {
	rps          float64
	p50ms, p99ms float64
	errors       int64
	clientCPU    float64
}

// runTool runs one generator pinned to the client core and reads its machine-readable output.
func (b *bench) runTool(ctx context.Context, protocol, tool string, srv *server, d time.Duration, phase string, onStart ...func(pid int)) (toolResult, error) {
	base := filepath.Join(b.rawDir, fmt.Sprintf("%s-%s-%s", protocol, tool, phase))
	var args []string
	var parse func(stdout []byte) (toolResult, error)
	switch tool {
	case "protobench":
		args, parse = b.protobenchArgs(protocol, srv, d, base)
	case "protobench-lib":
		args, parse = b.protobenchArgs(protocol, srv, d, base)
		args = append(args, protocolSpecs[protocol].libClient...)
	case "ghz":
		args, parse = b.ghzArgs(srv, d)
	case "wrk":
		a, p, err := b.wrkArgs(srv, d, base)
		if err != nil {
			return toolResult{}, err
		}
		args, parse = a, p
	case "k6":
		a, p, err := b.k6Args(protocol, srv, d, base)
		if err != nil {
			return toolResult{}, err
		}
		args, parse = a, p
	}
	cmd := exec.CommandContext(ctx, "taskset", append([]string{"-c", strconv.Itoa(b.o.clientCore), b.tools[tool]}, args...)...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if tool == "k6" {
		cmd.Env = append(os.Environ(), "K6_NO_USAGE_REPORT=true")
	}
	err := cmd.Start()
	if err == nil {
		for _, f := range onStart {
			f(cmd.Process.Pid) // taskset execs the generator, so this is the generator's pid
		}
		err = cmd.Wait()
	}
	_ = os.WriteFile(base+".stdout", stdout.Bytes(), 0o644)
	_ = os.WriteFile(base+".stderr", stderr.Bytes(), 0o644)
	_ = os.WriteFile(base+".cmd", []byte(strings.Join(cmd.Args, " ")+"\n"), 0o644)
	if err != nil {
		return toolResult{}, fmt.Errorf("%s: %v: %s", strings.Join(cmd.Args, " "), err, pbtool.LastLine(stderr.Bytes()))
	}
	return parse(stdout.Bytes())
}

func (b *bench) protobenchArgs(protocol string, srv *server, d time.Duration, base string) ([]string, func([]byte) (toolResult, error)) {
	conns, conc := b.o.grpcConns, b.o.inflight/b.o.grpcConns
	switch protocol {
	case "http":
		conns, conc = b.o.inflight, 1 // HTTP/1.1: one request per connection at a time, as wrk
	case "netrpc", "zmq":
		conns, conc = b.o.grpcConns, b.o.inflight/b.o.grpcConns
	}
	out := base + ".json"
	args := []string{"load", "--target", protocolSpecs[protocol].scheme + "://" + srv.addr, "--method", "GetUser",
		"--connections", strconv.Itoa(conns), "--concurrency", strconv.Itoa(conc),
		"--duration", d.String(), "--warmup", "0s", "--out", out, "--progress", "off"}
	return args, func([]byte) (toolResult, error) {
		raw, err := os.ReadFile(out)
		if err != nil {
			return toolResult{}, err
		}
		return parseProtobench(raw)
	}
}

// parseProtobench reads `protobench load --out` JSON.
func parseProtobench(raw []byte) (toolResult, error) {
	var r struct {
		ThroughputRPS float64 `json:"throughput_rps"`
		Errors        int64   `json:"errors"`
		Latency       struct {
			P50 float64 `json:"p50"`
			P99 float64 `json:"p99"`
		} `json:"latency_ms"`
		ClientCPUPercent float64 `json:"client_cpu_percent"`
		Error            string  `json:"error"`
	}
	if err := json.Unmarshal(raw, &r); err != nil {
		return toolResult{}, fmt.Errorf("protobench JSON: %v", err)
	}
	if r.Error != "" {
		return toolResult{}, errors.New(r.Error)
	}
	return toolResult{rps: r.ThroughputRPS, p50ms: r.Latency.P50, p99ms: r.Latency.P99, errors: r.Errors, clientCPU: r.ClientCPUPercent}, nil
}

func (b *bench) ghzArgs(srv *server, d time.Duration) ([]string, func([]byte) (toolResult, error)) {
	args := []string{"--insecure", "--disable-template-data",
		"--import-paths", filepath.Join(b.repoDir(), "proto"), "--proto", "protobench/v1/bench.proto",
		"--call", "protobench.v1.Bench.GetUser", "-d", `{"id":42}`,
		"--connections", strconv.Itoa(b.o.grpcConns), "-c", strconv.Itoa(b.o.inflight),
		"-z", d.String(), "--duration-stop", "ignore", "-O", "json", srv.addr}
	return args, parseGHZ
}

// parseGHZ reads ghz's -O json report (latencies in nanoseconds).
func parseGHZ(stdout []byte) (toolResult, error) {
	var r struct {
		RPS                 float64 `json:"rps"`
		LatencyDistribution []struct {
			Percentage int     `json:"percentage"`
			Latency    float64 `json:"latency"`
		} `json:"latencyDistribution"`
		StatusCodeDistribution map[string]int64 `json:"statusCodeDistribution"`
	}
	if err := json.Unmarshal(stdout, &r); err != nil {
		return toolResult{}, fmt.Errorf("ghz JSON: %v", err)
	}
	res := toolResult{rps: r.RPS}
	for _, l := range r.LatencyDistribution {
		switch l.Percentage {
		case 50:
			res.p50ms = l.Latency / 1e6
		case 99:
			res.p99ms = l.Latency / 1e6
		}
	}
	for code, n := range r.StatusCodeDistribution {
		if code != "OK" {
			res.errors += n
		}
	}
	return res, nil
}

func (b *bench) repoDir() string {
	if b.o.repo != "" {
		return b.o.repo
	}
	r, _ := repo.Root()
	return r
}

// wrkScript prints wrk's summary as one JSON line from its done() hook, so nothing parses wrk's
// human report. It defines no request() function, so wrk keeps its static, prebuilt request.
const wrkScript = `
done = function(summary, latency, requests)
  local errors = summary.errors.connect + summary.errors.read + summary.errors.write + summary.errors.status + summary.errors.timeout
  io.write(string.format('{"requests":%d,"duration_us":%d,"errors":%d,"p50_us":%d,"p99_us":%d}\n',
    summary.requests, summary.duration, errors, latency:percentile(50), latency:percentile(99)))
end
`

func (b *bench) wrkArgs(srv *server, d time.Duration, base string) ([]string, func([]byte) (toolResult, error), error) {
	script := base + ".lua"
	if err := os.WriteFile(script, []byte(wrkScript), 0o644); err != nil {
		return nil, nil, err
	}
	args := []string{"-t1", "-c" + strconv.Itoa(b.o.inflight), "-d" + strconv.Itoa(int(d.Seconds())) + "s", "-s", script,
		"http://" + srv.addr + "/v1/users/42"}
	return args, parseWrk, nil
}

// parseWrk reads the JSON line wrkScript's done() printed after wrk's own report.
func parseWrk(stdout []byte) (toolResult, error) {
	i := bytes.LastIndex(stdout, []byte(`{"requests":`))
	if i < 0 {
		return toolResult{}, errors.New("wrk printed no summary line (was the done() script loaded?)")
	}
	var r struct {
		Requests   int64 `json:"requests"`
		DurationUS int64 `json:"duration_us"`
		Errors     int64 `json:"errors"`
		P50US      int64 `json:"p50_us"`
		P99US      int64 `json:"p99_us"`
	}
	if err := json.Unmarshal(bytes.TrimSpace(stdout[i:]), &r); err != nil {
		return toolResult{}, fmt.Errorf("wrk summary line: %v", err)
	}
	if r.DurationUS <= 0 {
		return toolResult{}, errors.New("wrk reported no duration")
	}
	return toolResult{rps: float64(r.Requests) / (float64(r.DurationUS) / 1e6), errors: r.Errors, p50ms: float64(r.P50US) / 1000, p99ms: float64(r.P99US) / 1000}, nil
}

const k6GRPCScript = `
import grpc from 'k6/net/grpc';
const client = new grpc.Client();
client.load([__ENV.PROTO_DIR], 'protobench/v1/bench.proto');
let connected = false;
export const options = { vus: Number(__ENV.VUS), duration: __ENV.DURATION, summaryTrendStats: ['p(50)', 'p(99)'] };
export default function () {
  if (!connected) { client.connect(__ENV.ADDR, { plaintext: true }); connected = true; }
  client.invoke('protobench.v1.Bench/GetUser', { id: 42 });
}
export function handleSummary(data) { return { [__ENV.SUMMARY]: JSON.stringify(data) }; }
`

const k6HTTPScript = `
import http from 'k6/http';
export const options = { vus: Number(__ENV.VUS), duration: __ENV.DURATION, summaryTrendStats: ['p(50)', 'p(99)'] };
export default function () { http.get('http://' + __ENV.ADDR + '/v1/users/42'); }
export function handleSummary(data) { return { [__ENV.SUMMARY]: JSON.stringify(data) }; }
`

func (b *bench) k6Args(protocol string, srv *server, d time.Duration, base string) ([]string, func([]byte) (toolResult, error), error) {
	script, summary, body, metric, trend := base+".js", base+".summary.json", k6HTTPScript, "http_reqs", "http_req_duration"
	if protocol == "grpc" {
		body, metric, trend = k6GRPCScript, "iterations", "grpc_req_duration" // one invoke per iteration
	}
	if err := os.WriteFile(script, []byte(body), 0o644); err != nil {
		return nil, nil, err
	}
	args := []string{"run", "--quiet", "--no-color",
		"-e", "ADDR=" + srv.addr, "-e", "VUS=" + strconv.Itoa(b.o.inflight), "-e", "DURATION=" + d.String(),
		"-e", "PROTO_DIR=" + filepath.Join(b.repoDir(), "proto"), "-e", "SUMMARY=" + summary, script}
	return args, func([]byte) (toolResult, error) {
		raw, err := os.ReadFile(summary)
		if err != nil {
			return toolResult{}, fmt.Errorf("k6 wrote no summary: %v", err)
		}
		return parseK6(raw, metric, trend)
	}, nil
}

// parseK6 reads the summary handleSummary wrote: the request counter's rate and the latency
// trend's p(50) and p(99), in milliseconds.
func parseK6(raw []byte, metric, trend string) (toolResult, error) {
	var r struct {
		Metrics map[string]struct {
			Values map[string]float64 `json:"values"`
		} `json:"metrics"`
	}
	if err := json.Unmarshal(raw, &r); err != nil {
		return toolResult{}, fmt.Errorf("k6 summary: %v", err)
	}
	reqs, ok := r.Metrics[metric]
	if !ok {
		return toolResult{}, fmt.Errorf("k6 summary has no %s", metric)
	}
	res := toolResult{rps: reqs.Values["rate"]}
	if t, ok := r.Metrics[trend]; ok {
		res.p50ms, res.p99ms = t.Values["p(50)"], t.Values["p(99)"]
	}
	if f, ok := r.Metrics["http_req_failed"]; ok {
		res.errors = int64(f.Values["passes"])
	}
	return res, nil
}

// report prints the table and the ratios.
func (b *bench) report(ms []measurement) {
	tw := tabwriter.NewWriter(b.stdout, 0, 0, 2, ' ', tabwriter.AlignRight)
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
	fmt.Fprintln(b.stdout, "(\"others\": the core's busy time beyond the process itself: other processes, and kernel work such as loopback TCP done there for either side.)")

	fmt.Fprintln(b.stdout)
	tw = tabwriter.NewWriter(b.stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "check\tmeasured\ttarget\tresult")
	ratio := func(name, protocol, other string, target float64) {
		ours := "protobench"
		if n, _, ok := strings.Cut(name, " / "); ok {
			ours = n
		}
		a, okA := get[protocol+"/"+ours]
		o, okO := get[protocol+"/"+other]
		if !okA || !okO || a.err != nil || o.err != nil || o.rps == 0 {
			return
		}
		r := a.rps / o.rps
		fmt.Fprintf(tw, "%s\t%.2f×\t≥ %.1f×\t%s\n", name, r, target, verdict(r >= target))
	}
	ratio("protobench / ghz, gRPC GetUser", "grpc", "ghz", TargetVsGHZ)
	ratio("protobench-lib / ghz, gRPC GetUser", "grpc", "ghz", TargetVsGHZ)
	ratio("protobench / wrk, HTTP GET GetUser", "http", "wrk", TargetVsWrk)
	ratio("protobench / k6, gRPC GetUser", "grpc", "k6", TargetVsK6)
	ratio("protobench-lib / k6, gRPC GetUser", "grpc", "k6", TargetVsK6)
	ratio("protobench / k6, HTTP GET GetUser", "http", "k6", TargetVsK6)
	var protocols []string
	for _, m := range ms {
		if m.tool == "protobench" && m.err == nil {
			protocols = append(protocols, m.protocol)
		}
	}
	sort.Strings(protocols)
	for _, p := range protocols {
		c := get[p+"/protobench"].serverCPU
		fmt.Fprintf(tw, "server CPU driven by protobench, %s\t%.0f %%\t≥ %.0f %%\t%s\n", p, c, TargetServerCPU, verdict(c >= TargetServerCPU))
	}
	for _, p := range protocols {
		m := get[p+"/protobench"]
		if m.serverUS > 0 {
			r := m.clientUS / m.serverUS
			fmt.Fprintf(tw, "protobench CPU per request / server's, %s\t%.2f\t≤ %.2f\t%s\n", p, r, 100/TargetServerCPU, verdict(r <= 100/TargetServerCPU))
		}
	}
	tw.Flush()
	fmt.Fprintln(b.stdout, "(On equal cores the server reaches its cap first when the generator spends less CPU per request than the server does; this ratio holds up on a busy machine, where the CPU shares above do not.)")
}

func verdict(ok bool) string {
	if ok {
		return "ok"
	}
	return "MISSED"
}

// memory runs protobench alone against the HTTP server for the requested number of requests and
// samples its resident set once a second.
func (b *bench) memory(ctx context.Context) error {
	srv, err := b.startServer(ctx, "http")
	if err != nil {
		return err
	}
	defer srv.stop()
	// Calibrate: how long do the requests take at full speed?
	res, err := b.runTool(ctx, "http", "protobench", srv, 3*time.Second, "calibrate")
	if err != nil {
		return err
	}
	if res.rps <= 0 {
		return errors.New("calibration run completed no request")
	}
	d := time.Duration(float64(b.o.memoryRequests)/res.rps*1.1*float64(time.Second)).Round(time.Second) + time.Second
	fmt.Fprintf(b.stdout, "memory: protobench load against the HTTP server at ~%.0f rps for %s (≥ %d requests), RSS sampled every second\n", res.rps, d, b.o.memoryRequests)
	out := filepath.Join(b.rawDir, "memory.json")
	cmd := exec.CommandContext(ctx, "taskset", "-c", strconv.Itoa(b.o.clientCore), b.tools["protobench"], "load",
		"--target", "http://"+srv.addr, "--method", "GetUser", "--connections", strconv.Itoa(b.o.inflight), "--concurrency", "1",
		"--duration", d.String(), "--warmup", "0s", "--out", out, "--progress", "off")
	cmd.Stdout = io.Discard
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		return err
	}
	type sample struct {
		at  time.Duration
		rss int64
	}
	var samples []sample
	start := time.Now()
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	var waitErr error
loop:
	for {
		select {
		case waitErr = <-done:
			break loop
		case <-tick.C:
			if rss, err := rssBytes(cmd.Process.Pid); err == nil {
				samples = append(samples, sample{time.Since(start), rss})
			}
		}
	}
	if waitErr != nil {
		return fmt.Errorf("memory run: %v: %s", waitErr, pbtool.LastLine(stderr.Bytes()))
	}
	raw, err := os.ReadFile(out)
	if err != nil {
		return err
	}
	var r struct {
		Requests int64 `json:"requests"`
	}
	if err := json.Unmarshal(raw, &r); err != nil {
		return err
	}
	if len(samples) < 4 {
		return errors.New("too few RSS samples")
	}
	tw := tabwriter.NewWriter(b.stdout, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "elapsed\tRSS MiB\t")
	for _, q := range []float64{0.05, 0.25, 0.5, 0.75, 1} {
		s := samples[min(len(samples)-1, int(q*float64(len(samples))))]
		fmt.Fprintf(tw, "%s\t%.1f\t\n", s.at.Round(time.Second), float64(s.rss)/(1<<20))
	}
	tw.Flush()
	var peak int64
	for _, s := range samples {
		peak = max(peak, s.rss)
	}
	early := samples[len(samples)/10].rss
	last := samples[len(samples)-1].rss
	growth := 100 * float64(last-early) / float64(early)
	fmt.Fprintf(b.stdout, "requests %d; RSS %.1f MiB after 10%% of the run, %.1f MiB at the end (%+.1f %%), peak %.1f MiB: %s\n",
		r.Requests, float64(early)/(1<<20), float64(last)/(1<<20), growth, float64(peak)/(1<<20), verdict(growth < 10 && r.Requests >= b.o.memoryRequests))
	return nil
}

// rssBytes is a process's resident set from /proc/<pid>/status.
func rssBytes(pid int) (int64, error) {
	f, err := os.Open(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if rest, ok := strings.CutPrefix(sc.Text(), "VmRSS:"); ok {
			fields := strings.Fields(rest)
			if len(fields) >= 1 {
				kb, err := strconv.ParseInt(fields[0], 10, 64)
				return kb << 10, err
			}
		}
	}
	return 0, errors.New("no VmRSS")
}
