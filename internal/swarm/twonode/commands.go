package twonode

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// node runs the docker CLI against the second daemon.
func (c *Cluster) node(ctx context.Context, args ...string) (string, error) {
	return c.run(ctx, "docker on the second node", c.Env(), c.docker, args...)
}

func (c *Cluster) run(ctx context.Context, step string, env []string, name string, args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Env = env
	out, err := cmd.CombinedOutput()
	s := strings.TrimSpace(string(out))
	if err != nil {
		line := name + " " + strings.Join(args, " ")
		if env != nil {
			line = "DOCKER_HOST=" + c.DockerHost + " " + line
		}
		return s, &StepError{Step: step, Cmd: line, Output: s, Err: err}
	}
	return s, nil
}

func (c *Cluster) logf(format string, a ...any) {
	if c.log != nil {
		fmt.Fprintf(c.log, "twonode: "+format+"\n", a...)
	}
}

// addrOwner names the interface that holds the IPv4 address a, or "".
func addrOwner(a string) string {
	ifs, _ := net.Interfaces()
	for _, i := range ifs {
		addrs, _ := i.Addrs()
		for _, x := range addrs {
			if n, ok := x.(*net.IPNet); ok && n.IP.String() == a {
				return i.Name
			}
		}
	}
	return ""
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
