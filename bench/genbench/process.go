package genbench

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/protobench/protobench/internal/record"
	"github.com/protobench/protobench/internal/repo"
	"github.com/protobench/protobench/internal/scenario"
	"github.com/protobench/protobench/internal/tool"
	"github.com/protobench/protobench/internal/tool/k6"
)

func itoa(i int) string { return strconv.Itoa(i) }

// locateTools finds every requested generator's program; a missing external one is skipped with
// the command that installs it.
func (b *bench) locateTools() error {
	if _, err := exec.LookPath("taskset"); err != nil {
		return errors.New("taskset not found (Debian package util-linux): it pins the server and the generators to their cores")
	}
	b.repo = b.o.repo
	if b.repo == "" {
		r, err := repo.Root()
		if err != nil {
			return fmt.Errorf("%v (or give --repo)", err)
		}
		b.repo = r
	}
	b.tools = map[string]string{}
	// Our generator is the protobench binary's load subcommand: the one given, the one run.sh
	// built, or (empty here) one built from this checkout next to the servers.
	self := b.o.protobench
	if self == "" {
		self = os.Getenv("PROTOBENCH_BIN")
	}
	gobin := filepath.Join(os.Getenv("HOME"), "go", "bin")
	if v := os.Getenv("GOBIN"); v != "" {
		gobin = v
	} else if v := os.Getenv("GOPATH"); v != "" {
		gobin = filepath.Join(strings.Split(v, ":")[0], "bin")
	}
	for _, name := range b.o.tools {
		g := generators[name]
		if g.tool == ours {
			b.tools[name] = self
			continue
		}
		a, ok := tool.Lookup(g.tool)
		if !ok {
			return fmt.Errorf("generator %s: no %s adapter in this build", name, g.tool)
		}
		program := a.Capabilities().Program
		if program == "" {
			program = g.tool
		}
		path, err := exec.LookPath(program)
		if err != nil {
			if p := filepath.Join(gobin, program); isExecutable(p) {
				path, err = p, nil
			}
		}
		if err != nil {
			fmt.Fprintf(b.stderr, "bench-generators: %s not found, skipping it (install: %s)\n", program, g.install)
			continue
		}
		b.tools[name] = path
	}
	return nil
}

func isExecutable(p string) bool {
	st, err := os.Stat(p)
	return err == nil && !st.IsDir() && st.Mode()&0o111 != 0
}

// buildProtobench builds the protobench binary from this checkout when none was given, as the
// servers are built: the bench is its own command, so it cannot run itself as the generator.
func (b *bench) buildProtobench(ctx context.Context) error {
	bin := filepath.Join(b.binDir, "protobench")
	built := false
	for name, path := range b.tools {
		if path != "" || generators[name].tool != ours {
			continue
		}
		if !built {
			cmd := exec.CommandContext(ctx, "go", "build", "-o", bin, "./cmd/protobench")
			cmd.Dir = b.repo
			if out, err := cmd.CombinedOutput(); err != nil {
				return fmt.Errorf("go build ./cmd/protobench (or give --protobench): %v\n%s", err, out)
			}
			built = true
		}
		b.tools[name] = bin
	}
	return nil
}

// buildServers builds the real server binaries the protocols need.
func (b *bench) buildServers(ctx context.Context) error {
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
		cmd.Dir = b.repo
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
	s := &server{addr: "127.0.0.1:" + itoa(ports[0]), metrics: "127.0.0.1:" + itoa(ports[1])}
	args := []string{"-c", itoa(b.o.serverCore), filepath.Join(b.binDir, spec.server), "--listen", s.addr, "--metrics-listen", s.metrics}
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

// runGenerator runs one generator pinned to the client core with the command line its adapter
// builds, and reads its output with the same adapter. onStart, when given, gets the generator's
// pid as soon as it runs (taskset execs it, so taskset's pid is the generator's).
func (b *bench) runGenerator(ctx context.Context, protocol, name string, srv *server, d time.Duration, phase string, onStart func(pid int)) (record.Record, error) {
	g := generators[name]
	a, _ := tool.Lookup(g.tool)
	inv := b.o.invocation(protocol, srv.addr, d, b.rawDir, fmt.Sprintf("%s-%s-%s", protocol, name, phase))
	if err := a.Check(inv); err != nil {
		return record.Record{}, err
	}
	for file, data := range a.InputFiles(inv) {
		if err := os.WriteFile(filepath.Join(b.rawDir, file), data, 0o644); err != nil {
			return record.Record{}, err
		}
	}
	args := nativeArgs(a, inv, b.repo)
	if g.libClient {
		args = append(args, protocolSpecs[protocol].libClient...)
	}
	cmd := exec.CommandContext(ctx, "taskset", append([]string{"-c", itoa(b.o.clientCore), b.tools[name]}, args...)...)
	if a.Name() == "k6" {
		// As in a run's k6 container (compose's k6 service), with a run's default memory cap.
		cmd.Env = append(os.Environ(), k6.RuntimeEnv(scenario.DefaultClientMemoryBytes)...)
	}
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Start()
	if err == nil {
		if onStart != nil {
			onStart(cmd.Process.Pid)
		}
		err = cmd.Wait()
	}
	base := filepath.Join(b.rawDir, inv.RawPrefix)
	_ = os.WriteFile(base+".stdout", stdout.Bytes(), 0o644)
	_ = os.WriteFile(base+".stderr", stderr.Bytes(), 0o644)
	_ = os.WriteFile(base+".cmd", []byte(strings.Join(cmd.Args, " ")+"\n"), 0o644)
	if err != nil {
		return record.Record{}, fmt.Errorf("%s: %v: %s", strings.Join(cmd.Args, " "), err, tool.LastLine(stderr.Bytes()))
	}
	return readRun(a, inv)
}

// readRun reads a finished run back from RawDir, where runGenerator keeps everything: the
// generator's stdout and stderr and the files it wrote, all named after the invocation's
// RawPrefix. The adapter makes the record.
func readRun(a tool.Adapter, inv tool.Invocation) (record.Record, error) {
	base := filepath.Join(inv.RawDir, inv.RawPrefix)
	var raw tool.Raw
	var err error
	if raw.Stdout, err = os.ReadFile(base + ".stdout"); err != nil {
		return record.Record{}, err
	}
	if raw.Stderr, err = os.ReadFile(base + ".stderr"); err != nil {
		return record.Record{}, err
	}
	raw.Files = map[string][]byte{}
	written, _ := filepath.Glob(base + "*")
	for _, p := range written {
		if data, err := os.ReadFile(p); err == nil {
			raw.Files[filepath.Base(p)] = data
		}
	}
	rec, err := a.Parse(inv, raw)
	switch {
	case err != nil:
		return rec, err
	case rec.Error != "":
		return rec, errors.New(rec.Error)
	}
	return rec, nil
}

// nativeArgs is the adapter's command line for a run outside the tool's image: the image's
// paths become the checkout's, and protobench serves no live metrics (nothing scrapes them, and
// a fixed port could collide).
func nativeArgs(a tool.Adapter, inv tool.Invocation, checkout string) []string {
	args := a.Args(inv)
	paths := a.Capabilities().HostPaths
	out := make([]string, 0, len(args))
	for i := 0; i < len(args); i++ {
		if args[i] == "--metrics-listen" && a.Name() == ours {
			i++
			continue
		}
		arg := args[i]
		for image, rel := range paths {
			arg = strings.Replace(arg, image, filepath.Join(checkout, rel), 1)
		}
		out = append(out, arg)
	}
	return out
}
