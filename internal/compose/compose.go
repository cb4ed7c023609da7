// Package compose drives protobench's stack through the compose CLI, so the compose file stays the
// single description of every container: `docker compose` (v2) where it exists, `docker-compose`
// (v1.29) otherwise. Every method is context-aware, and a dry run prints the exact commands
// instead of running them.
package compose

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// DefaultProjectName is protobench's compose project: containers, networks and volumes are
// named after it, and cAdvisor's labels carry it.
const DefaultProjectName = "protobench"

// Profiles are the compose file's profiles. Every command enables all of them, so that naming a
// service is enough to start it and `down` removes everything; `up` always names its services.
var Profiles = []string{"servers", "tools", "grafana"}

// Options configures a Client.
type Options struct {
	// Dir holds the compose files; it is the project directory (relative paths in the file are
	// resolved from it). Required.
	Dir string
	// Files are the compose files, relative to Dir; DefaultFiles if empty.
	Files []string
	// Extra are compose files read after Files, absolute or relative to Dir: a run's custom
	// targets (see RenderServers).
	Extra []string
	// ProjectName is DefaultProjectName if empty.
	ProjectName string
	// Env is the interpolation environment every command gets on top of the process
	// environment; per-call env maps go on top of it.
	Env map[string]string
	// DryRun prints commands to Log instead of running those that change anything.
	DryRun bool
	// Log receives dry-run commands; os.Stderr if nil.
	Log io.Writer
	// Command forces the compose command, e.g. {"docker-compose"} or {"docker", "compose"}.
	// Empty: the PROTOBENCH_COMPOSE environment variable ("v1", "v2" or a command), else
	// detection (v2 first).
	Command []string
	// Docker is the docker CLI used for inspect, ps and rm; "docker" if empty.
	Docker string
	// DiscardVolumes makes Down remove the project's volumes too: a lab bench's project, whose
	// Prometheus data is of no use once it ends and would otherwise pile up, one per run.
	DiscardVolumes bool
}

// Client runs compose commands for one project.
type Client struct {
	opts    Options
	files   []string // absolute
	command []string
	version string
	fast    *fastCache // rendered configs of the fast path (fast.go)
}

// New checks that Docker answers (a *DockerUnreachableError otherwise) and finds the compose
// command. In a dry run neither is required: what is missing is logged and the commands shown
// are those of `docker compose`.
func New(ctx context.Context, opts Options) (*Client, error) {
	if opts.Dir == "" {
		return nil, errors.New("compose: Options.Dir is required")
	}
	dir, err := filepath.Abs(opts.Dir)
	if err != nil {
		return nil, err
	}
	opts.Dir = dir
	if len(opts.Files) == 0 {
		opts.Files = DefaultFiles
	}
	if opts.ProjectName == "" {
		opts.ProjectName = DefaultProjectName
	}
	if opts.Log == nil {
		opts.Log = os.Stderr
	}
	if opts.Docker == "" {
		opts.Docker = "docker"
	}
	c := &Client{opts: opts, fast: &fastCache{}}
	for _, f := range append(append([]string{}, opts.Files...), opts.Extra...) {
		if !filepath.IsAbs(f) {
			f = filepath.Join(dir, f)
		}
		if _, err := os.Stat(f); err != nil {
			return nil, fmt.Errorf("compose file: %w", err)
		}
		c.files = append(c.files, f)
	}
	if _, err := CheckDocker(ctx, opts.Docker); err != nil {
		if !opts.DryRun {
			return nil, err
		}
		fmt.Fprintf(opts.Log, "# dry run: %v\n", err)
	}
	if opts.DryRun && len(opts.Command) > 0 {
		// A dry run with a given command shows its commands whether or not it is installed.
		c.command, c.version = opts.Command, "unknown (dry run)"
		return c, nil
	}
	c.command, c.version, err = detect(ctx, opts)
	if err != nil {
		if !opts.DryRun {
			return nil, err
		}
		c.command = []string{opts.Docker, "compose"}
		fmt.Fprintf(opts.Log, "# dry run: %v; showing docker compose commands\n", err)
	}
	return c, nil
}

// detect finds the compose command and its version.
func detect(ctx context.Context, opts Options) ([]string, string, error) {
	candidates := [][]string{{opts.Docker, "compose"}, {"docker-compose"}}
	forced := opts.Command
	if len(forced) == 0 {
		switch v := strings.TrimSpace(os.Getenv("PROTOBENCH_COMPOSE")); v {
		case "":
		case "v2":
			forced = []string{opts.Docker, "compose"}
		case "v1":
			forced = []string{"docker-compose"}
		default:
			forced = strings.Fields(v)
		}
	}
	if len(forced) > 0 {
		candidates = [][]string{forced}
	}
	var tried []string
	for _, cand := range candidates {
		ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		out, err := exec.CommandContext(ctx, cand[0], append(cand[1:], "version", "--short")...).Output()
		cancel()
		tried = append(tried, strings.Join(cand, " "))
		if err == nil {
			return cand, strings.TrimPrefix(strings.TrimSpace(string(out)), "v"), nil
		}
	}
	return nil, "", fmt.Errorf("no compose command works (tried %s): install the Docker Compose plugin (v2) or docker-compose 1.29", strings.Join(tried, ", "))
}

// Command is the compose command in use, e.g. [docker compose].
func (c *Client) Command() []string { return append([]string(nil), c.command...) }

// Version is the compose version without a leading "v" (e.g. 2.40.3 or 1.29.2).
func (c *Client) Version() string { return c.version }

// Kind is "v2" or "v1".
func (c *Client) Kind() string {
	if strings.HasPrefix(c.version, "1.") {
		return "v1"
	}
	return "v2"
}

// ProjectName is the compose project name.
func (c *Client) ProjectName() string { return c.opts.ProjectName }

// Up starts services (detached) and leaves running ones alone. Before it starts Prometheus or
// Grafana it checks that their published port is free, so a taken port gives an error naming it
// instead of a half-started stack.
func (c *Client) Up(ctx context.Context, env map[string]string, services ...string) error {
	if len(services) == 0 {
		return errors.New("compose up: name the services to start")
	}
	merged := c.environment(env)
	for _, s := range services {
		if err := c.checkPublishedPort(ctx, s, merged); err != nil {
			return err
		}
	}
	_, _, err := c.compose(ctx, env, append([]string{"up", "-d"}, services...)...)
	return err
}

// Recreate starts a fresh container of service (a new one even when one is running), without
// touching its dependencies: every benchmark step gets a server with no history.
func (c *Client) Recreate(ctx context.Context, service string, env map[string]string) error {
	_, _, err := c.compose(ctx, env, "up", "-d", "--no-deps", "--force-recreate", "--renew-anon-volumes", service)
	return err
}

// Stop stops service's containers and keeps them.
func (c *Client) Stop(ctx context.Context, service string) error {
	_, _, err := c.compose(ctx, nil, "stop", service)
	return err
}

// Remove stops and removes service's containers.
func (c *Client) Remove(ctx context.Context, service string) error {
	_, _, err := c.compose(ctx, nil, "rm", "--force", "--stop", service)
	return err
}

// Down stops and removes the project's containers and network; the Prometheus volume stays, so
// earlier runs remain in Grafana (unless Options.DiscardVolumes).
func (c *Client) Down(ctx context.Context) error {
	args := []string{"down", "--remove-orphans", "--timeout", "10"}
	if c.opts.DiscardVolumes {
		args = append(args, "--volumes")
	}
	_, _, err := c.compose(ctx, nil, args...)
	return err
}

// Run runs a one-off container of service with args (after entrypoint, or the service's own when
// empty), without a
// TTY, without starting dependencies, removed afterwards, and returns its output and exit status.
// name, if set, is the container's fixed name (Prometheus scrapes the load generator as
// protobench-loadgen); a leftover container of that name from a crashed run is removed first. err
// is set only when compose itself could not run (then exitCode is -1); a tool that fails returns
// its own exit status and output with a nil error.
func (c *Client) Run(ctx context.Context, service, name, entrypoint string, env map[string]string, args []string) (stdout, stderr []byte, exitCode int, err error) {
	return c.run(ctx, true, service, name, entrypoint, env, args)
}

// RunTimed is Run for a named container that also returns when the container's process started
// and ended (docker inspect), read before the container is removed: the tool's own lifetime,
// free of compose's start-up and of the container's tear-down, which `run --rm` returning
// includes. started and finished are zero when docker could not tell.
func (c *Client) RunTimed(ctx context.Context, service, name, entrypoint string, env map[string]string, args []string) (stdout, stderr []byte, exitCode int, started, finished time.Time, err error) {
	if name == "" || c.opts.DryRun {
		stdout, stderr, exitCode, err = c.Run(ctx, service, name, entrypoint, env, args)
		return stdout, stderr, exitCode, time.Time{}, time.Time{}, err
	}
	stdout, stderr, exitCode, err = c.run(ctx, false, service, name, entrypoint, env, args)
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 20*time.Second)
	defer cancel()
	if err == nil {
		started, finished, _ = c.Lifetime(rctx, name)
	}
	c.removeContainer(rctx, name)
	return stdout, stderr, exitCode, started, finished, err
}

// Lifetime is when a container's process started and finished, from docker inspect.
func (c *Client) Lifetime(ctx context.Context, name string) (started, finished time.Time, err error) {
	out, err := c.docker(ctx, "inspect", "--format", "{{.State.StartedAt}}|{{.State.FinishedAt}}", name)
	if err != nil {
		return started, finished, err
	}
	s, f, ok := strings.Cut(out, "|")
	if !ok {
		return started, finished, fmt.Errorf("docker inspect %s: unexpected output %q", name, out)
	}
	if started, err = time.Parse(time.RFC3339Nano, s); err != nil {
		return time.Time{}, time.Time{}, fmt.Errorf("docker inspect %s: StartedAt %q: %w", name, s, err)
	}
	if finished, err = time.Parse(time.RFC3339Nano, f); err != nil || !finished.After(started) {
		return time.Time{}, time.Time{}, fmt.Errorf("docker inspect %s: FinishedAt %q is not after StartedAt %q", name, f, s)
	}
	return started, finished, nil
}

func (c *Client) run(ctx context.Context, rm bool, service, name, entrypoint string, env map[string]string, args []string) (stdout, stderr []byte, exitCode int, err error) {
	argv := []string{"run", "-T", "--no-deps"}
	if rm {
		argv = []string{"run", "--rm", "-T", "--no-deps"}
	}
	if name != "" {
		c.removeContainer(ctx, name)
		argv = append(argv, "--name", name)
	}
	// Two tools can share one image and service (wrk2 and wrk); the entrypoint picks the program.
	if entrypoint != "" {
		argv = append(argv, "--entrypoint", entrypoint)
	}
	argv = append(argv, service)
	argv = append(argv, args...)
	var outBuf, errBuf bytes.Buffer
	code, err := c.composeStatus(ctx, env, &outBuf, &errBuf, argv...)
	if name != "" && ctx.Err() != nil {
		// An interrupted run leaves its container behind; `--rm` only acts on a normal exit.
		rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 20*time.Second)
		c.removeContainer(rctx, name)
		cancel()
	}
	errOut := errBuf.Bytes()
	if c.Kind() == "v1" {
		errOut = stripV1Noise(errOut, c.opts.ProjectName, service, code)
	}
	return outBuf.Bytes(), errOut, code, err
}

// stripV1Noise removes what docker-compose 1.x adds to a one-off run's stderr and v2 does not:
// progress lines ("Creating network ...", "Creating <project>_<service>_run ... done", whatever
// --name says) and, after a non-zero exit, a last line holding just the exit status. The raw
// stderr a tool leaves is then the same under both. Only these exact shapes go.
func stripV1Noise(stderr []byte, project, service string, exitCode int) []byte {
	container := project + "_" + service + "_run"
	lines := bytes.SplitAfter(stderr, []byte("\n"))
	if n := len(lines); n > 0 && len(lines[n-1]) == 0 {
		lines = lines[:n-1]
	}
	if n := len(lines); n > 0 && exitCode != 0 && strings.TrimSpace(string(lines[n-1])) == strconv.Itoa(exitCode) {
		lines = lines[:n-1]
	}
	var out []byte
	for _, line := range lines {
		text := strings.TrimRight(string(line), "\r\n ")
		switch {
		case strings.HasPrefix(text, `Creating network "`+project+`_`) && strings.HasSuffix(text, " driver"),
			strings.HasPrefix(text, `Creating volume "`+project+`_`) && strings.HasSuffix(text, " driver"),
			text == "Creating "+container+" ...", text == "Creating "+container+" ... done":
			continue
		}
		out = append(out, line...)
	}
	return out
}

// ContainerID is the ID of service's (non one-off) container, running or not; "" if it has none.
// It asks docker by compose labels, which v1 and v2 both set, rather than by container name,
// which they spell differently.
func (c *Client) ContainerID(ctx context.Context, service string) (string, error) {
	if c.opts.DryRun {
		return "", nil
	}
	out, err := c.docker(ctx, "ps", "--all", "--quiet", "--no-trunc",
		"--filter", "label=com.docker.compose.project="+c.opts.ProjectName,
		"--filter", "label=com.docker.compose.service="+service,
		"--filter", "label=com.docker.compose.oneoff=False")
	if err != nil {
		return "", err
	}
	ids := strings.Fields(out)
	if len(ids) == 0 {
		return "", nil
	}
	return ids[0], nil
}

// WaitHealthy waits until service's container reports healthy (or, for a service without a
// healthcheck, is running). It fails early when the container exits or turns unhealthy, with the
// end of its log or of its last probe's output.
func (c *Client) WaitHealthy(ctx context.Context, service string, timeout time.Duration) error {
	if c.opts.DryRun {
		fmt.Fprintf(c.opts.Log, "# wait until %s is healthy (at most %s)\n", service, timeout)
		return nil
	}
	deadline := time.Now().Add(timeout)
	last := "no container"
	for {
		id, err := c.ContainerID(ctx, service)
		if err != nil {
			return err
		}
		if id != "" {
			out, err := c.docker(ctx, "inspect", "--format",
				"{{.State.Status}}|{{if .State.Health}}{{.State.Health.Status}}{{end}}", id)
			if err == nil {
				status, health, _ := strings.Cut(out, "|")
				last = status
				if health != "" {
					last = status + ", " + health
				}
				switch {
				case health == "healthy", health == "" && status == "running":
					return nil
				case status == "exited" || status == "dead":
					return fmt.Errorf("%s exited before it was healthy; its log ends:\n%s", service, c.logTail(ctx, id))
				case health == "unhealthy":
					return fmt.Errorf("%s is unhealthy; last probe: %s", service, c.lastProbe(ctx, id))
				}
			}
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%s not healthy after %s (%s)", service, timeout, last)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(200 * time.Millisecond):
		}
	}
}

func (c *Client) logTail(ctx context.Context, id string) string {
	cmd := exec.CommandContext(ctx, c.opts.Docker, "logs", "--tail", "15", id)
	out, _ := cmd.CombinedOutput()
	return strings.TrimSpace(string(out))
}

func (c *Client) lastProbe(ctx context.Context, id string) string {
	out, err := c.docker(ctx, "inspect", "--format",
		"{{with .State.Health}}{{range .Log}}{{.ExitCode}}: {{.Output}}\n{{end}}{{end}}", id)
	if err != nil {
		return err.Error()
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	return strings.TrimSpace(lines[len(lines)-1])
}

// removeContainer force-removes a container by name, ignoring "no such container".
func (c *Client) removeContainer(ctx context.Context, name string) {
	if c.opts.DryRun {
		fmt.Fprintf(c.opts.Log, "+ %s rm -f %s\n", c.opts.Docker, name)
		return
	}
	_ = exec.CommandContext(ctx, c.opts.Docker, "rm", "-f", name).Run()
}

// docker runs a read-only docker command and returns its trimmed stdout.
func (c *Client) docker(ctx context.Context, args ...string) (string, error) {
	var stdout, stderr bytes.Buffer
	cmd := exec.CommandContext(ctx, c.opts.Docker, args...)
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("%s %s: %v: %s", c.opts.Docker, strings.Join(args, " "), err, firstLine(stderr.String()))
	}
	return strings.TrimSpace(stdout.String()), nil
}

// baseArgs are the arguments every compose command starts with.
func (c *Client) baseArgs() []string {
	args := append([]string(nil), c.command[1:]...)
	args = append(args, "-p", c.opts.ProjectName)
	for _, f := range c.files {
		args = append(args, "-f", f)
	}
	for _, p := range Profiles {
		args = append(args, "--profile", p)
	}
	return args
}

// CommandLine is the full command line for compose args, as it would run (for logs and dry runs).
func (c *Client) CommandLine(args ...string) []string {
	return append(append([]string{c.command[0]}, c.baseArgs()...), args...)
}

// environment is the process environment plus Options.Env plus env, later ones winning.
func (c *Client) environment(env map[string]string) map[string]string {
	merged := map[string]string{}
	for _, kv := range os.Environ() {
		if k, v, ok := strings.Cut(kv, "="); ok {
			merged[k] = v
		}
	}
	for k, v := range c.opts.Env {
		merged[k] = v
	}
	for k, v := range env {
		merged[k] = v
	}
	return merged
}

// compose runs a compose command that must succeed; stdout and stderr are captured.
func (c *Client) compose(ctx context.Context, env map[string]string, args ...string) (stdout, stderr []byte, err error) {
	var outBuf, errBuf bytes.Buffer
	code, err := c.composeStatus(ctx, env, &outBuf, &errBuf, args...)
	if err == nil && code != 0 {
		err = &CommandError{Args: c.CommandLine(args...), ExitCode: code, Stderr: strings.TrimSpace(errBuf.String())}
	}
	return outBuf.Bytes(), errBuf.Bytes(), err
}

// composeStatus runs a compose command and returns its exit status; err only when it could not
// run. On cancellation compose gets SIGTERM first, so it can stop what it started.
func (c *Client) composeStatus(ctx context.Context, env map[string]string, stdout, stderr io.Writer, args ...string) (int, error) {
	if c.opts.DryRun {
		fmt.Fprintf(c.opts.Log, "+ %s%s\n", envPrefix(c.opts.Env, env), quoteLine(c.CommandLine(args...)))
		return 0, nil
	}
	return c.composeReadOnly(ctx, env, stdout, stderr, args...)
}

// composeReadOnly runs a compose command that changes nothing (config), in a dry run too.
func (c *Client) composeReadOnly(ctx context.Context, env map[string]string, stdout, stderr io.Writer, args ...string) (int, error) {
	line := c.CommandLine(args...)
	cmd := exec.CommandContext(ctx, line[0], line[1:]...)
	cmd.Stdout, cmd.Stderr = stdout, stderr
	merged := c.environment(env)
	cmd.Env = make([]string, 0, len(merged))
	for k, v := range merged {
		cmd.Env = append(cmd.Env, k+"="+v)
	}
	cmd.Cancel = func() error { return cmd.Process.Signal(syscall.SIGTERM) }
	cmd.WaitDelay = 15 * time.Second
	err := cmd.Run()
	if ctx.Err() != nil {
		return -1, ctx.Err()
	}
	var exitErr *exec.ExitError
	if errors.As(err, &exitErr) {
		return exitErr.ExitCode(), nil
	}
	if err != nil {
		return -1, fmt.Errorf("%s: %w", quoteLine(line), err)
	}
	return 0, nil
}

// CommandError is a compose command that exited non-zero.
type CommandError struct {
	Args     []string
	ExitCode int
	Stderr   string
}

// Error names the command, its status and the end of what it printed.
func (e *CommandError) Error() string {
	tail := e.Stderr
	if lines := strings.Split(tail, "\n"); len(lines) > 12 {
		tail = strings.Join(lines[len(lines)-12:], "\n")
	}
	return fmt.Sprintf("%s: exit status %d: %s", quoteLine(e.Args), e.ExitCode, tail)
}

// envPrefix renders the PROTOBENCH_* part of the environment a dry-run command gets.
func envPrefix(maps ...map[string]string) string {
	merged := map[string]string{}
	for _, m := range maps {
		for k, v := range m {
			merged[k] = v
		}
	}
	keys := make([]string, 0, len(merged))
	for k := range merged {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var b strings.Builder
	for _, k := range keys {
		b.WriteString(quoteArg(k + "=" + merged[k]))
		b.WriteString(" ")
	}
	return b.String()
}

func quoteLine(argv []string) string {
	q := make([]string, len(argv))
	for i, a := range argv {
		q[i] = quoteArg(a)
	}
	return strings.Join(q, " ")
}

func quoteArg(a string) string {
	if a != "" && !strings.ContainsAny(a, " \t\n'\"$`\\|&;<>()*?[]{}!#~") {
		return a
	}
	return "'" + strings.ReplaceAll(a, "'", `'\''`) + "'"
}
