package compose

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"sort"
	"strings"
	"syscall"
	"time"
)

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
