package nodes

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// docker runs the docker CLI against the node's daemon.
func (n *Node) docker(ctx context.Context, args ...string) (string, error) {
	return n.c.runAt(ctx, "docker on "+n.Hostname, n.Env(), n.DockerHost, n.c.docker, args...)
}

// run runs a command on the host (the docker CLI against the manager when name is docker).
func (c *Cluster) run(ctx context.Context, step string, name string, args ...string) (string, error) {
	return c.runAt(ctx, step, nil, "", name, args...)
}

// runAt runs a command with env (nil: the host's own), whose line in an error names dockerHost
// when it is set.
func (c *Cluster) runAt(ctx context.Context, step string, env []string, dockerHost, name string, args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Env = env
	out, err := cmd.CombinedOutput()
	s := strings.TrimSpace(string(out))
	if err != nil {
		line := name + " " + strings.Join(args, " ")
		if dockerHost != "" {
			line = "DOCKER_HOST=" + dockerHost + " " + line
		}
		return s, &StepError{Step: step, Cmd: line, Output: s, Err: err}
	}
	return s, nil
}

func (c *Cluster) logf(format string, a ...any) {
	if c.log != nil {
		fmt.Fprintf(c.log, "nodes: "+format+"\n", a...)
	}
}

// mountsUnder lists the host's mount points at or below dir.
func mountsUnder(dir string) []string {
	b, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		return nil
	}
	var out []string
	for _, line := range strings.Split(string(b), "\n") {
		f := strings.Fields(line)
		if len(f) > 4 && (f[4] == dir || strings.HasPrefix(f[4], dir+"/")) {
			out = append(out, f[4])
		}
	}
	return out
}

// processesMentioning lists the PIDs whose command line contains s.
func processesMentioning(s string) []int {
	ents, _ := os.ReadDir("/proc")
	var pids []int
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == os.Getpid() {
			continue
		}
		b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err == nil && bytes.Contains(b, []byte(s)) {
			pids = append(pids, pid)
		}
	}
	return pids
}

// tail returns the last n lines of a file.
func tail(path string, n int) string {
	f, err := os.Open(path)
	if err != nil {
		return ""
	}
	defer f.Close()
	var lines []string
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64*1024), 1024*1024)
	for sc.Scan() {
		lines = append(lines, sc.Text())
		if len(lines) > n {
			lines = lines[1:]
		}
	}
	return strings.Join(lines, "\n")
}
