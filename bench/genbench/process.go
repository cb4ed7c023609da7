package genbench

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/protobench/protobench/bench/internal/hostproc"
	"github.com/protobench/protobench/internal/record"
	"github.com/protobench/protobench/internal/repo"
	"github.com/protobench/protobench/internal/scenario"
	"github.com/protobench/protobench/internal/tool"
	"github.com/protobench/protobench/internal/tool/k6"
	"github.com/protobench/protobench/internal/tool/native"
)

func itoa(i int) string { return strconv.Itoa(i) }

// locateTools finds every requested generator's program; a missing external one is skipped with
// the command that installs it.
func (b *bench) locateTools() error {
	if err := hostproc.CheckTaskset(); err != nil {
		return err
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
			if err := hostproc.Build(ctx, b.repo, "./cmd/protobench", bin); err != nil {
				return fmt.Errorf("give --protobench, or fix the build: %w", err)
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
		if err := hostproc.Build(ctx, b.repo, "./servers/"+s, filepath.Join(b.binDir, s)); err != nil {
			return err
		}
	}
	return nil
}

// server is a running server process. cmd is its command, whose pid the measurement reads.
type server struct {
	proc    *hostproc.Process
	cmd     *exec.Cmd
	addr    string // protocol address
	metrics string // metrics host:port
}

// startServer starts a fresh server pinned to the server core with GOMAXPROCS=1.
func (b *bench) startServer(ctx context.Context, protocol string) (*server, error) {
	spec := protocolSpecs[protocol]
	ports, err := hostproc.FreePorts(4)
	if err != nil {
		return nil, err
	}
	s := &server{addr: "127.0.0.1:" + itoa(ports[0]), metrics: "127.0.0.1:" + itoa(ports[1])}
	args := []string{"--listen", s.addr, "--metrics-listen", s.metrics}
	if spec.extra != nil {
		args = append(args, spec.extra(ports)...)
	}
	p, err := hostproc.Start(ctx, hostproc.Server{
		Core: b.o.serverCore, Env: []string{"GOMAXPROCS=1"}, Program: filepath.Join(b.binDir, spec.server), Args: args,
		Log: filepath.Join(b.rawDir, protocol+"-server.log"), Health: "http://" + s.metrics + "/healthz", Timeout: 20 * time.Second,
	})
	if err != nil {
		return nil, fmt.Errorf("%s server: %w", protocol, err)
	}
	s.proc, s.cmd = p, p.Cmd
	return s, nil
}

func (s *server) stop() { s.proc.Stop() }

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
	var env []string
	if a.Name() == "k6" {
		// As in a run's k6 container (compose's k6 service), with a run's default memory cap.
		env = k6.RuntimeEnv(scenario.DefaultClientMemoryBytes)
		if inv.CAFile != "" {
			// As the k6 service's SSL_CERT_FILE on a TLS step: k6's HTTP client trusts the
			// system's roots only, and Go's crypto/x509 reads them from this file.
			env = append(env, "SSL_CERT_FILE="+inv.CAFile)
		}
	}
	cmd := hostproc.Pinned(ctx, b.o.clientCore, env, b.tools[name], args...)
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
// paths become the checkout's, a tool with event-loop threads runs one on its one pinned core,
// and protobench serves no live metrics (nothing scrapes them, and a fixed port could collide).
func nativeArgs(a tool.Adapter, inv tool.Invocation, checkout string) []string {
	host := native.Lookup(a.Name())
	args := host.WithThreads(host.HostArgs(a.Args(inv), checkout), 1)
	out := make([]string, 0, len(args))
	for i := 0; i < len(args); i++ {
		if args[i] == "--metrics-listen" && a.Name() == ours {
			i++
			continue
		}
		out = append(out, args[i])
	}
	return out
}
