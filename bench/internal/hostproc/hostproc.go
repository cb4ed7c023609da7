// Package hostproc builds, starts, pins and stops the lab benches' native processes: the servers
// they measure and the generators bench-generators runs outside Docker. Each is pinned to one core
// with taskset, which execs the program, so the process started is the program itself and its pid
// is the one to read /proc for.
package hostproc

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"syscall"
	"time"
)

// stopGrace is how long a process has to end after SIGTERM before it is killed.
const stopGrace = 5 * time.Second

// Build compiles the Go package pkg (such as ./servers/grpc) of the checkout at repo into bin.
func Build(ctx context.Context, repo, pkg, bin string) error {
	cmd := exec.CommandContext(ctx, "go", "build", "-o", bin, pkg)
	cmd.Dir = repo
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("go build %s: %v\n%s", pkg, err, out)
	}
	return nil
}

// Pinned is the command that runs program with args on core alone (taskset -c), with env added to
// this process's environment. The caller runs it: a generator to its end, a server through Start.
func Pinned(ctx context.Context, core int, env []string, program string, args ...string) *exec.Cmd {
	cmd := exec.CommandContext(ctx, "taskset", append([]string{"-c", strconv.Itoa(core), program}, args...)...)
	if len(env) > 0 {
		cmd.Env = append(os.Environ(), env...)
	}
	return cmd
}

// CheckTaskset says why processes cannot be pinned here, or nil.
func CheckTaskset() error {
	if _, err := exec.LookPath("taskset"); err != nil {
		return fmt.Errorf("taskset not found (Debian package util-linux): it pins the server and the generators to their cores")
	}
	return nil
}

// Server is how a long-lived process is started.
type Server struct {
	Core    int
	Env     []string // added to the environment, such as GOMAXPROCS=1
	Program string
	Args    []string
	Log     string // file that takes its stdout and stderr
	// Health answers 200 once the process serves; Start waits for it up to Timeout.
	Health  string
	Timeout time.Duration
}

// Process is a started server.
type Process struct {
	Cmd    *exec.Cmd
	exited chan struct{}
}

// Start starts s pinned to its core and waits until its health URL answers. A process that
// exits or does not answer in time is stopped, and the error names its log.
func Start(ctx context.Context, s Server) (*Process, error) {
	logFile, err := os.Create(s.Log)
	if err != nil {
		return nil, err
	}
	// Not tied to ctx: the caller stops it with Stop, after what it measures is read.
	cmd := Pinned(context.WithoutCancel(ctx), s.Core, s.Env, s.Program, s.Args...)
	cmd.Stdout, cmd.Stderr = logFile, logFile
	if err := cmd.Start(); err != nil {
		logFile.Close()
		return nil, err
	}
	p := &Process{Cmd: cmd, exited: make(chan struct{})}
	go func() {
		_ = cmd.Wait()
		logFile.Close()
		close(p.exited)
	}()
	if err := WaitHTTP(ctx, s.Health, s.Timeout, p.exited); err != nil {
		p.Stop()
		return nil, fmt.Errorf("%s not healthy (log: %s): %w", filepath.Base(s.Program), s.Log, err)
	}
	return p, nil
}

// Pid is the process's pid (the program's: taskset execs it).
func (p *Process) Pid() int { return p.Cmd.Process.Pid }

// Stop asks the process to end (SIGTERM) and kills it if it has not within a few seconds.
func (p *Process) Stop() {
	_ = p.Cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.exited:
	case <-time.After(stopGrace):
		_ = p.Cmd.Process.Kill()
		<-p.exited
	}
}

// WaitHTTP waits until url answers 200, polling every 100 ms. ended, when not nil, is closed when
// whatever should answer has ended: the wait then fails at once.
func WaitHTTP(ctx context.Context, url string, timeout time.Duration, ended <-chan struct{}) error {
	deadline := time.Now().Add(timeout)
	client := &http.Client{Timeout: time.Second}
	for {
		resp, err := client.Get(url)
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
			err = fmt.Errorf("status %s", resp.Status)
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%s did not answer 200 within %s (last: %v)", url, timeout, err)
		}
		select {
		case <-ended:
			return fmt.Errorf("it ended before %s answered", url)
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// FreePorts are n distinct TCP ports of 127.0.0.1 free a moment ago, all held until each was
// picked, so none is given twice.
func FreePorts(n int) ([]int, error) {
	ports := make([]int, 0, n)
	for i := 0; i < n; i++ {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, err
		}
		defer l.Close()
		ports = append(ports, l.Addr().(*net.TCPAddr).Port)
	}
	return ports, nil
}

// FreeAddrs are FreePorts as 127.0.0.1:port addresses.
func FreeAddrs(n int) ([]string, error) {
	ports, err := FreePorts(n)
	if err != nil {
		return nil, err
	}
	addrs := make([]string, n)
	for i, p := range ports {
		addrs[i] = "127.0.0.1:" + strconv.Itoa(p)
	}
	return addrs, nil
}
