package compose

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os/exec"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"go.yaml.in/yaml/v3"
)

// The fast path starts a benchmark's per-run containers (a fresh server, a one-off tool) with the
// docker CLI instead of the compose CLI. Compose stays the single truth: every container is made
// from the service exactly as `compose config` renders it, with the labels compose itself would
// put on it, so `down`, cAdvisor's service labels and the teardown by project label all see them.
// What changes is the cost. docker-compose 1.x spends a second or more in Python start-up on each
// call, and a run used four such calls; the docker CLI starts and removes a container in a few
// tenths of a second. `compose config` runs once per distinct environment and is cached.

// perRunVar marks the variables that change on every run (the step labels): they are rendered as
// placeholders, so one rendered config serves every run, and filled in when a container starts.
func perRunVar(name string) bool { return strings.HasPrefix(name, "PROTOBENCH_LABEL_") }

func placeholder(name string) string { return "@@" + name + "@@" }

// Service is one service of the compose file as `compose config` rendered it.
type Service struct {
	Name        string
	Image       string
	Entrypoint  []string
	Command     []string
	Environment map[string]*string // nil: passed through from the caller's environment
	CPUs        string
	CPUSet      string
	Memory      string
	Ulimits     map[string][2]int64 // soft, hard
	Labels      map[string]string
	User        string
	Volumes     []string // host:container[:mode]
	HealthTest  []string // the health check's test, in CMD or CMD-SHELL form
	StopGrace   string
	// NetworkMode is the service's network_mode ("host"); empty: the project's network. No
	// service of the compose files sets it; a lab bench's override file does.
	NetworkMode string
}

// renderedService is the part of `compose config` output the fast path reads; v1 and v2 write
// some fields in different shapes, which the yaml.Node fields absorb.
type renderedService struct {
	Image       string               `yaml:"image"`
	Entrypoint  yaml.Node            `yaml:"entrypoint"`
	Command     yaml.Node            `yaml:"command"`
	Environment map[string]*string   `yaml:"environment"`
	CPUs        yaml.Node            `yaml:"cpus"`
	CPUSet      string               `yaml:"cpuset"`
	MemLimit    yaml.Node            `yaml:"mem_limit"`
	Ulimits     map[string]yaml.Node `yaml:"ulimits"`
	Labels      map[string]string    `yaml:"labels"`
	User        string               `yaml:"user"`
	Volumes     []yaml.Node          `yaml:"volumes"`
	Healthcheck *struct {
		Test yaml.Node `yaml:"test"`
	} `yaml:"healthcheck"`
	StopGracePeriod string `yaml:"stop_grace_period"`
	NetworkMode     string `yaml:"network_mode"`
}

// ParseConfig reads the services of `compose config` output (v1 or v2).
func ParseConfig(data []byte) (map[string]*Service, error) {
	var doc struct {
		Services map[string]renderedService `yaml:"services"`
	}
	if err := yaml.Unmarshal(data, &doc); err != nil {
		return nil, fmt.Errorf("compose config: %w", err)
	}
	out := make(map[string]*Service, len(doc.Services))
	for name, rs := range doc.Services {
		s := &Service{
			Name: name, Image: rs.Image, Environment: rs.Environment, CPUSet: rs.CPUSet,
			Labels: rs.Labels, User: rs.User, StopGrace: rs.StopGracePeriod,
			Entrypoint: words(rs.Entrypoint), Command: words(rs.Command),
			CPUs: rs.CPUs.Value, Memory: rs.MemLimit.Value, Ulimits: map[string][2]int64{},
			NetworkMode: rs.NetworkMode,
		}
		for k, n := range rs.Ulimits {
			var lim struct{ Soft, Hard int64 }
			if n.Kind == yaml.ScalarNode {
				v, err := strconv.ParseInt(n.Value, 10, 64)
				if err != nil {
					return nil, fmt.Errorf("compose config: services.%s.ulimits.%s: %q is not a number", name, k, n.Value)
				}
				lim.Soft, lim.Hard = v, v
			} else if err := n.Decode(&lim); err != nil {
				return nil, fmt.Errorf("compose config: services.%s.ulimits.%s: %w", name, k, err)
			}
			s.Ulimits[k] = [2]int64{lim.Soft, lim.Hard}
		}
		for i, v := range rs.Volumes {
			vol, err := volume(v)
			if err != nil {
				return nil, fmt.Errorf("compose config: services.%s.volumes[%d]: %w", name, i, err)
			}
			s.Volumes = append(s.Volumes, vol)
		}
		if rs.Healthcheck != nil {
			s.HealthTest = words(rs.Healthcheck.Test)
		}
		out[name] = s
	}
	return out, nil
}

// words reads a field that compose accepts as a list or as one string.
func words(n yaml.Node) []string {
	switch n.Kind {
	case yaml.SequenceNode:
		out := make([]string, 0, len(n.Content))
		for _, c := range n.Content {
			out = append(out, c.Value)
		}
		return out
	case yaml.ScalarNode:
		if n.Tag == "!!null" || n.Value == "" {
			return nil
		}
		return strings.Fields(n.Value)
	}
	return nil
}

// volume reads a bind mount in v1's short form ("src:dst:rw") or v2's long form.
func volume(n yaml.Node) (string, error) {
	if n.Kind == yaml.ScalarNode {
		return n.Value, nil
	}
	var long struct {
		Type     string `yaml:"type"`
		Source   string `yaml:"source"`
		Target   string `yaml:"target"`
		ReadOnly bool   `yaml:"read_only"`
	}
	if err := n.Decode(&long); err != nil {
		return "", err
	}
	if long.Type != "" && long.Type != "bind" && long.Type != "volume" {
		return "", fmt.Errorf("volume type %q is not supported by the fast path", long.Type)
	}
	mode := "rw"
	if long.ReadOnly {
		mode = "ro"
	}
	return long.Source + ":" + long.Target + ":" + mode, nil
}

// fastCache holds rendered configs by environment.
type fastCache struct {
	mu       sync.Mutex
	rendered map[string]map[string]*Service
}

// ServiceSpec is service as compose renders it with env (on top of the client's own
// environment). Per-run variables become placeholders that StartArgs and RunArgs fill in.
func (c *Client) ServiceSpec(ctx context.Context, service string, env map[string]string) (*Service, error) {
	stable := map[string]string{}
	for k, v := range c.environment(env) {
		if perRunVar(k) {
			v = placeholder(k)
		}
		stable[k] = v
	}
	key := envKey(stable)
	c.fast.mu.Lock()
	services, ok := c.fast.rendered[key]
	c.fast.mu.Unlock()
	if !ok {
		var out, errOut bytes.Buffer
		// config only reads the files: a dry run renders too (the swarm engine's dry run
		// prints the services it makes from the rendering).
		code, err := c.composeReadOnly(ctx, stable, &out, &errOut, "config")
		if err == nil && code != 0 {
			err = fmt.Errorf("%s config exited with %d: %s", c.command[0], code, firstLine(errOut.String()))
		}
		if err != nil {
			return nil, err
		}
		services, err = ParseConfig(out.Bytes())
		if err != nil {
			return nil, err
		}
		c.fast.mu.Lock()
		if c.fast.rendered == nil {
			c.fast.rendered = map[string]map[string]*Service{}
		}
		c.fast.rendered[key] = services
		c.fast.mu.Unlock()
	}
	s, ok := services[service]
	if !ok {
		return nil, fmt.Errorf("compose file has no service %q", service)
	}
	return s, nil
}

func envKey(env map[string]string) string {
	keys := make([]string, 0, len(env))
	for k := range env {
		if strings.HasPrefix(k, "PROTOBENCH_") || strings.HasPrefix(k, "COMPOSE_") {
			keys = append(keys, k)
		}
	}
	sort.Strings(keys)
	h := sha256.New()
	for _, k := range keys {
		fmt.Fprintf(h, "%s=%s\x00", k, env[k])
	}
	return hex.EncodeToString(h.Sum(nil))
}

// Fill replaces per-run placeholders (@@PROTOBENCH_LABEL_*@@, rendered so that one `compose config`
// serves every run) with their values from env; one without a value becomes empty. The fast path
// and the swarm engine both start containers from the rendered services with it.
func Fill(s string, env map[string]string) string {
	if !strings.Contains(s, "@@") {
		return s
	}
	for k, v := range env {
		if perRunVar(k) {
			s = strings.ReplaceAll(s, placeholder(k), v)
		}
	}
	// A per-run variable the caller did not set is empty, as compose's ${VAR:-} would make it.
	for strings.Contains(s, "@@PROTOBENCH_LABEL_") {
		i := strings.Index(s, "@@PROTOBENCH_LABEL_")
		j := strings.Index(s[i+2:], "@@")
		if j < 0 {
			break
		}
		s = s[:i] + s[i+2+j+2:]
	}
	return s
}

// FastContainer is how one container of the fast path is made.
type FastContainer struct {
	Service    *Service
	Name       string            // container name
	Entrypoint string            // overrides the service's entrypoint program when set
	Env        map[string]string // the call's environment: per-run variables and pass-throughs
	Args       []string          // replaces the service's command when set
	OneOff     bool              // a run-once tool container, removed when it exits
}

// UlimitArgs spells ulimits (soft, hard) as the docker CLI's --ulimit flags, which `docker run`
// and `docker service create` share, sorted by name so that a command line reads the same twice.
func UlimitArgs(ulimits map[string][2]int64) []string {
	names := make([]string, 0, len(ulimits))
	for k := range ulimits {
		names = append(names, k)
	}
	sort.Strings(names)
	args := make([]string, 0, 2*len(names))
	for _, k := range names {
		l := ulimits[k]
		args = append(args, "--ulimit", fmt.Sprintf("%s=%d:%d", k, l[0], l[1]))
	}
	return args
}

// DockerArgs is the docker CLI command line (without the docker program) that makes f: `run -d`
// for a long-lived container, `run --rm` for a one-off.
func (c *Client) DockerArgs(f FastContainer) []string {
	env := c.environment(f.Env)
	args := []string{"run"}
	if f.OneOff {
		args = append(args, "--rm")
	} else {
		args = append(args, "-d")
	}
	args = append(args, c.identityArgs(f, env)...)
	args = append(args, resourceArgs(f)...)
	args = append(args, envArgs(f.Service, env)...)
	return append(args, commandArgs(f)...)
}

// identityArgs name f's container, put it on its network and label it as compose labels its
// own, so that compose's commands (ps, down) find it.
func (c *Client) identityArgs(f FastContainer, env map[string]string) []string {
	s, project := f.Service, c.opts.ProjectName
	oneoff := "False"
	if f.OneOff {
		oneoff = "True"
	}
	args := []string{"--name", f.Name}
	if s.NetworkMode != "" {
		// As compose does: the container joins that network (the host's) instead of the
		// project's, and has no alias there (docker allows one on user-defined networks only).
		args = append(args, "--network", s.NetworkMode)
	} else {
		args = append(args, "--network", project+"_default", "--network-alias", s.Name)
	}
	args = append(args,
		"--label", "com.docker.compose.project="+project,
		"--label", "com.docker.compose.service="+s.Name,
		"--label", "com.docker.compose.oneoff="+oneoff,
		"--label", "com.docker.compose.container-number=1")
	labels := make([]string, 0, len(s.Labels))
	for k, v := range s.Labels {
		labels = append(labels, k+"="+Fill(v, env))
	}
	sort.Strings(labels)
	for _, l := range labels {
		args = append(args, "--label", l)
	}
	return args
}

// resourceArgs are f's caps, user, volumes and stop timeout.
func resourceArgs(f FastContainer) []string {
	s := f.Service
	var args []string
	if s.CPUs != "" {
		args = append(args, "--cpus", s.CPUs)
	}
	if s.CPUSet != "" {
		args = append(args, "--cpuset-cpus", s.CPUSet)
	}
	if s.Memory != "" {
		args = append(args, "--memory", s.Memory)
	}
	args = append(args, UlimitArgs(s.Ulimits)...)
	if s.User != "" {
		args = append(args, "--user", s.User)
	}
	for _, v := range s.Volumes {
		args = append(args, "-v", v)
	}
	if s.StopGrace != "" && !f.OneOff {
		if d, err := time.ParseDuration(s.StopGrace); err == nil {
			args = append(args, "--stop-timeout", strconv.Itoa(int(d.Seconds())))
		}
	}
	return args
}

// envArgs are the service's environment, in name order, its values filled from env.
func envArgs(s *Service, env map[string]string) []string {
	keys := make([]string, 0, len(s.Environment))
	for k := range s.Environment {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var args []string
	for _, k := range keys {
		if v := s.Environment[k]; v != nil {
			args = append(args, "-e", k+"="+Fill(*v, env))
		} else if v, ok := env[k]; ok {
			// compose passes a variable listed without a value through from its environment.
			args = append(args, "-e", k+"="+v)
		}
	}
	return args
}

// commandArgs are the entrypoint, the image and the command: f's own entrypoint and arguments
// where it has them, the service's otherwise.
func commandArgs(f FastContainer) []string {
	s := f.Service
	entry := s.Entrypoint
	if f.Entrypoint != "" {
		entry = []string{f.Entrypoint}
	}
	var args, rest []string
	if len(entry) > 0 {
		args = append(args, "--entrypoint", entry[0])
		rest = append(rest, entry[1:]...)
	}
	args = append(args, s.Image)
	if f.Args != nil {
		rest = append(rest, f.Args...)
	} else {
		rest = append(rest, s.Command...)
	}
	return append(args, rest...)
}

// StartFast starts f detached and returns the container's ID. A leftover container of the same
// name (from a run that was killed) is removed first.
func (c *Client) StartFast(ctx context.Context, f FastContainer) (string, error) {
	c.removeContainer(ctx, f.Name)
	id, err := c.docker(ctx, c.DockerArgs(f)...)
	if err != nil {
		return "", err
	}
	return id, nil
}

// RunFast runs the one-off container f to its end and returns its output and exit status. err is
// set only when docker could not run it (exitCode is then -1). When ctx ends first, the container
// is removed, since the docker CLI's own exit would leave it running.
func (c *Client) RunFast(ctx context.Context, f FastContainer) (stdout, stderr []byte, exitCode int, err error) {
	f.OneOff = true
	c.removeContainer(ctx, f.Name)
	var outBuf, errBuf bytes.Buffer
	cmd := exec.CommandContext(ctx, c.opts.Docker, c.DockerArgs(f)...)
	cmd.Stdout, cmd.Stderr = &outBuf, &errBuf
	cmd.Cancel = func() error { return cmd.Process.Signal(syscall.SIGTERM) }
	cmd.WaitDelay = 5 * time.Second
	runErr := cmd.Run()
	if ctx.Err() != nil {
		c.removeContainer(context.WithoutCancel(ctx), f.Name)
		return outBuf.Bytes(), errBuf.Bytes(), -1, ctx.Err()
	}
	var exit *exec.ExitError
	switch {
	case runErr == nil:
		return outBuf.Bytes(), errBuf.Bytes(), 0, nil
	case errors.As(runErr, &exit):
		code := exit.ExitCode()
		// 125 is docker's own failure (the container never ran), not the tool's exit status.
		if code == 125 {
			return outBuf.Bytes(), errBuf.Bytes(), -1, fmt.Errorf("docker run %s: %s", f.Service.Name, firstLine(errBuf.String()))
		}
		return outBuf.Bytes(), errBuf.Bytes(), code, nil
	}
	return outBuf.Bytes(), errBuf.Bytes(), -1, runErr
}

// Probe runs the service's health check inside container id once and reports whether it passed.
// The runner probes a fresh server itself, as often as it likes, instead of letting Docker probe
// it every second for the whole run: a probe during a measurement would be counted as server CPU.
func (c *Client) Probe(ctx context.Context, id string, s *Service) error {
	test := s.HealthTest
	if len(test) == 0 {
		return nil
	}
	var argv []string
	switch test[0] {
	case "CMD":
		argv = test[1:]
	case "CMD-SHELL":
		argv = []string{"/bin/sh", "-c", strings.Join(test[1:], " ")}
	case "NONE":
		return nil
	default:
		argv = test
	}
	_, err := c.docker(ctx, append([]string{"exec", id}, argv...)...)
	return err
}

// RemoveByID removes container id at once (SIGKILL): the runner has read what it needs from it.
func (c *Client) RemoveByID(ctx context.Context, id string) error {
	_, err := c.docker(ctx, "rm", "-f", id)
	return err
}
