package compose

import (
	"bytes"
	"context"
	"fmt"
	"os/exec"
	"strconv"
	"strings"
	"time"
)

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

// removeContainer force-removes a container by name, ignoring "no such container".
func (c *Client) removeContainer(ctx context.Context, name string) {
	if c.opts.DryRun {
		fmt.Fprintf(c.opts.Log, "+ %s rm -f %s\n", c.opts.Docker, name)
		return
	}
	_ = exec.CommandContext(ctx, c.opts.Docker, "rm", "-f", name).Run()
}
