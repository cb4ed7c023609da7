package churnbench

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/protobench/protobench/bench/internal/hostproc"
	"github.com/protobench/protobench/internal/contract"
	"github.com/protobench/protobench/internal/tlscert"
)

// The generators: ours, and the independent witness of each row.
const (
	ours    = "protobench"
	openssl = "openssl"
	wrk     = "wrk"
)

// rowGenerators are each row's generators, ours first.
var rowGenerators = map[string][]string{
	"tls-full":    {ours, openssl},
	"tls-resumed": {ours, openssl},
	"http":        {ours, wrk},
}

var installHint = map[string]string{openssl: "apt-get install openssl", wrk: "apt-get install wrk"}

// path is the GET every generator sends: GetUser, as the scenarios' headline.
var path = "/v1/users/" + strconv.Itoa(contract.RequestUserID)

func overTLS(row string) bool { return row != "http" }

// findTools finds the witnesses on PATH; a missing one is skipped with how to install it.
func (b *bench) findTools() {
	for _, name := range []string{openssl, wrk} {
		if p, err := exec.LookPath(name); err == nil {
			b.tools[name] = p
		} else {
			fmt.Fprintf(b.stderr, "bench-churn: %s not found, skipping it (%s)\n", name, installHint[name])
		}
	}
}

// available lists row's generators that are here.
func (b *bench) available(row string) []string {
	var out []string
	for _, g := range rowGenerators[row] {
		if b.tools[g] != "" {
			out = append(out, g)
		}
	}
	return out
}

// measurement is one generator's run against a fresh server.
type measurement struct {
	row, tool     string
	connections   int64   // connections the generator opened and completed a request on
	connRate      float64 // connections a second
	serverCPU     float64 // % of one core
	clientCPU     float64 // the generator's, % of one core
	serverUS      float64 // server CPU per connection, µs
	clientUS      float64 // generator CPU per connection, µs
	full, resumed float64 // handshakes the server counted
	curves        string  // key exchanges the server negotiated
	errors        int64
	err           error
}

// clientBound is the runner's client-bound rule (record.ToolFilledItsCore) on the bench: the
// generator filled 90 % of its core while the server used less of its own.
func (m measurement) clientBound() bool {
	return m.clientCPU >= 90 && m.serverCPU < m.clientCPU
}

// measure runs one generator against a fresh server and reads both sides' CPU and the server's
// handshake counter around it.
func (b *bench) measure(ctx context.Context, row, gen string) measurement {
	m := measurement{row: row, tool: gen}
	ports, err := hostproc.FreePorts(2)
	if err != nil {
		m.err = err
		return m
	}
	addr, metrics := "127.0.0.1:"+strconv.Itoa(ports[0]), "127.0.0.1:"+strconv.Itoa(ports[1])
	args := []string{"--listen", addr, "--metrics-listen", metrics}
	if overTLS(row) {
		args = append(args, "--tls-cert", filepath.Join(b.tlsDir, tlscert.CertFile), "--tls-key", filepath.Join(b.tlsDir, tlscert.KeyFile), "--tls-alpn", "h2,http/1.1")
	}
	srv, err := hostproc.Start(ctx, hostproc.Server{Core: b.o.serverCore, Env: []string{"GOMAXPROCS=1"}, Program: filepath.Join(b.binDir, "rest"),
		Args: args, Log: filepath.Join(b.rawDir, row+"-"+gen+"-server.log"), Health: "http://" + metrics + "/healthz", Timeout: 20 * time.Second})
	if err != nil {
		m.err = err
		return m
	}
	defer srv.Stop()
	fmt.Fprintf(b.stderr, "running %s on the %s row ...\n", gen, row)
	hs0, _ := readHandshakes(ctx, metrics)
	cpu0, _ := cpuSeconds(srv.Pid())
	start := time.Now()
	var res runResult
	switch gen {
	case ours:
		res = b.runOurs(ctx, row, addr)
	case openssl:
		res = b.runSTime(ctx, row, addr)
	case wrk:
		res = b.runWrk(ctx, addr)
	}
	wall := time.Since(start).Seconds()
	cpu1, _ := cpuSeconds(srv.Pid())
	if res.err != nil {
		m.err = res.err
		return m
	}
	m.connections, m.connRate, m.errors = res.connections, res.rate, res.errors
	m.serverCPU, m.clientCPU = 100*(cpu1-cpu0)/wall, 100*res.cpu/res.wall
	if m.connections > 0 {
		m.serverUS, m.clientUS = (cpu1-cpu0)*1e6/float64(m.connections), res.cpu*1e6/float64(m.connections)
	}
	if overTLS(row) {
		hs1, err := readHandshakes(ctx, metrics)
		if err != nil {
			m.err = fmt.Errorf("the server's handshake counter: %w", err)
			return m
		}
		d := hs1.minus(hs0)
		m.full, m.resumed, m.curves = d.full, d.resumed, strings.Join(d.curveNames(), ", ")
		if d.full+d.resumed == 0 {
			m.err = fmt.Errorf("the server counted no TLS handshake")
		}
	}
	return m
}

// runResult is what one generator's run gave.
type runResult struct {
	connections int64
	rate        float64 // connections a second over the generator's own window
	errors      int64
	cpu         float64 // the generator's CPU seconds (rusage), all its processes
	wall        float64 // its wall time, seconds
	err         error
}

// runPinned runs one program pinned to the client core, keeps its output in the raw folder under
// name, and returns its output and CPU and wall time.
func (b *bench) runPinned(ctx context.Context, name string, env []string, program string, args ...string) (stdout []byte, cpu, wall float64, err error) {
	ctx, cancel := context.WithTimeout(ctx, 2*b.o.duration+30*time.Second)
	defer cancel()
	cmd := hostproc.Pinned(ctx, b.o.clientCore, env, program, args...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	start := time.Now()
	err = cmd.Run()
	wall = time.Since(start).Seconds()
	base := filepath.Join(b.rawDir, name)
	_ = os.WriteFile(base+".stdout", out.Bytes(), 0o644)
	_ = os.WriteFile(base+".stderr", errb.Bytes(), 0o644)
	_ = os.WriteFile(base+".cmd", []byte(strings.Join(cmd.Args, " ")+"\n"), 0o644)
	if cmd.ProcessState != nil {
		cpu = (cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime()).Seconds()
	}
	if err != nil {
		return out.Bytes(), cpu, wall, fmt.Errorf("%s: %v: %s", strings.Join(cmd.Args, " "), err, lastLine(errb.Bytes()))
	}
	return out.Bytes(), cpu, wall, nil
}

// runOurs is `protobench load` at N = 1: one connection per request, --connections of them at
// once, on its event loops.
func (b *bench) runOurs(ctx context.Context, row, addr string) runResult {
	out := filepath.Join(b.rawDir, row+"-protobench.json")
	args := []string{"load", "--target", "http://" + addr, "--http-version", "1.1", "--method", "GetUser",
		"--connections", strconv.Itoa(b.o.inflight), "--concurrency", "1", "--requests-per-connection", "1",
		"--duration", b.o.duration.String(), "--warmup", "0s", "--progress", "off", "--out", out}
	var env []string
	if overTLS(row) {
		args = append(args, "--tls-ca", filepath.Join(b.tlsDir, tlscert.CAFile), "--tls-server-name", "localhost",
			"--tls-version", b.o.tlsVersion, "--tls-resume="+strconv.FormatBool(row == "tls-resumed"))
		// X25519 first, as OpenSSL 3.0 offers it: Go's default X25519MLKEM768 costs both sides more.
		env = []string{"GODEBUG=tlsmlkem=0"}
	}
	_, cpu, wall, err := b.runPinned(ctx, row+"-protobench", env, b.tools[ours], args...)
	if err != nil {
		return runResult{err: err}
	}
	data, err := os.ReadFile(out)
	if err != nil {
		return runResult{err: err}
	}
	var r struct {
		Requests      int64   `json:"requests"`
		Errors        int64   `json:"errors"`
		ThroughputRPS float64 `json:"throughput_rps"`
		Error         string  `json:"error"`
	}
	if err := json.Unmarshal(data, &r); err != nil {
		return runResult{err: fmt.Errorf("%s: %w", out, err)}
	}
	if r.Error != "" {
		return runResult{err: fmt.Errorf("protobench: %s", r.Error)}
	}
	return runResult{connections: r.Requests, rate: r.ThroughputRPS, errors: r.Errors, cpu: cpu, wall: wall}
}

// runSTime runs one `openssl s_time` per connection at once: s_time opens one connection at a
// time, shakes hands (-new: a full handshake each time; -reuse: resuming its first session),
// sends the GET (-www) and reads the response to its end. It verifies the server's certificate
// against the run's CA, as ours does.
func (b *bench) runSTime(ctx context.Context, row, addr string) runResult {
	mode, version := "-new", "-tls1_3"
	if row == "tls-resumed" {
		mode = "-reuse"
	}
	if b.o.tlsVersion == "1.2" {
		version = "-tls1_2"
	}
	secs := strconv.Itoa(int(b.o.duration.Round(time.Second).Seconds()))
	results := make([]runResult, b.o.inflight)
	var wg sync.WaitGroup
	for i := range results {
		wg.Add(1)
		go func() {
			defer wg.Done()
			out, cpu, wall, err := b.runPinned(ctx, fmt.Sprintf("%s-openssl-%d", row, i), nil, b.tools[openssl], "s_time",
				"-connect", addr, mode, version, "-time", secs, "-www", path, "-CAfile", filepath.Join(b.tlsDir, tlscert.CAFile), "-verify", "2")
			n, perr := parseSTime(out)
			if err == nil {
				err = perr
			}
			results[i] = runResult{connections: n, cpu: cpu, wall: wall, err: err}
		}()
	}
	wg.Wait()
	var sum runResult
	for _, r := range results {
		if r.err != nil {
			return r
		}
		sum.connections += r.connections
		sum.cpu += r.cpu
		sum.wall = max(sum.wall, r.wall)
	}
	// Their wall time includes their start and end, which s_time's window does not: a rate over
	// it is, if anything, low by a few milliseconds in seconds.
	sum.rate = float64(sum.connections) / sum.wall
	return sum
}

var sTimeCount = regexp.MustCompile(`(?m)^(\d+) connections in [0-9.]+s;`)

// parseSTime reads the count of the last timing s_time printed ("-reuse" first makes the session
// it reuses, then times).
func parseSTime(out []byte) (int64, error) {
	all := sTimeCount.FindAllSubmatch(out, -1)
	if len(all) == 0 {
		return 0, fmt.Errorf("openssl s_time printed no \"N connections in\" line: %s", lastLine(out))
	}
	return strconv.ParseInt(string(all[len(all)-1][1]), 10, 64)
}

// runWrk runs wrk with one thread and --connections connections, each GET asking the server to
// close after its response: wrk then opens a new connection for the next request.
func (b *bench) runWrk(ctx context.Context, addr string) runResult {
	out, cpu, wall, err := b.runPinned(ctx, "http-wrk", nil, b.tools[wrk], "-t", "1", "-c", strconv.Itoa(b.o.inflight),
		"-d", strconv.Itoa(int(b.o.duration.Round(time.Second).Seconds()))+"s", "-H", "Connection: close", "http://"+addr+path)
	if err != nil {
		return runResult{err: err}
	}
	n, secs, errs, err := parseWrk(out)
	if err != nil {
		return runResult{err: err}
	}
	return runResult{connections: n, rate: float64(n) / secs, errors: errs, cpu: cpu, wall: wall}
}

var (
	wrkTotal  = regexp.MustCompile(`(\d+) requests in ([0-9.]+)(us|ms|s|m),`)
	wrkSocket = regexp.MustCompile(`Socket errors: connect (\d+), read (\d+), write (\d+), timeout (\d+)`)
	wrkNon2xx = regexp.MustCompile(`Non-2xx or 3xx responses: (\d+)`)
)

// parseWrk reads wrk's count of requests, its window in seconds and its errors.
func parseWrk(out []byte) (requests int64, secs float64, errs int64, err error) {
	m := wrkTotal.FindSubmatch(out)
	if m == nil {
		return 0, 0, 0, fmt.Errorf("wrk printed no \"N requests in\" line: %s", lastLine(out))
	}
	requests, _ = strconv.ParseInt(string(m[1]), 10, 64)
	secs, _ = strconv.ParseFloat(string(m[2]), 64)
	secs *= map[string]float64{"us": 1e-6, "ms": 1e-3, "s": 1, "m": 60}[string(m[3])]
	if s := wrkSocket.FindSubmatch(out); s != nil {
		for _, v := range s[1:] {
			n, _ := strconv.ParseInt(string(v), 10, 64)
			errs += n
		}
	}
	if s := wrkNon2xx.FindSubmatch(out); s != nil {
		n, _ := strconv.ParseInt(string(s[1]), 10, 64)
		errs += n
	}
	if secs <= 0 {
		return 0, 0, 0, fmt.Errorf("wrk's window of %s is not a duration", m[2])
	}
	return requests, secs, errs, nil
}

func lastLine(b []byte) string {
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	return lines[len(lines)-1]
}

// cpuSeconds is a process's user+system CPU time from /proc/<pid>/stat.
func cpuSeconds(pid int) (float64, error) {
	raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, err
	}
	s := string(raw)
	f := strings.Fields(s[strings.LastIndexByte(s, ')')+2:])
	if len(f) < 13 {
		return 0, fmt.Errorf("short /proc/%d/stat", pid)
	}
	utime, _ := strconv.ParseFloat(f[11], 64)
	stime, _ := strconv.ParseFloat(f[12], 64)
	return (utime + stime) / 100, nil // USER_HZ is 100 on every Linux architecture Go supports
}
