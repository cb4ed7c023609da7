package images

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
)

// tailBuffer keeps the last max bytes written to it: enough of a failed build's output to say
// what broke, without holding a whole build log in memory.
type tailBuffer struct {
	max int
	buf []byte
}

func (t *tailBuffer) Write(p []byte) (int, error) {
	t.buf = append(t.buf, p...)
	if over := len(t.buf) - t.max; over > 0 {
		t.buf = append(t.buf[:0], t.buf[over:]...)
	}
	return len(p), nil
}

// lines returns the last n non-empty lines.
func (t *tailBuffer) lines(n int) string {
	all := strings.Split(strings.TrimSpace(string(t.buf)), "\n")
	if len(all) > n {
		all = all[len(all)-n:]
	}
	return strings.Join(all, "\n")
}

// runner runs external commands for Ensure, sending their output to the build log.
type runner struct {
	docker   string
	buildLog io.Writer
	log      io.Writer
	dryRun   bool
}

// commandError is a failed command with the tail of its output.
type commandError struct {
	cmd  string
	err  error
	tail string
}

func (e *commandError) Error() string {
	if e.tail == "" {
		return fmt.Sprintf("%s: %v", e.cmd, e.err)
	}
	return fmt.Sprintf("%s: %v\n%s", e.cmd, e.err, indent(e.tail))
}

func (e *commandError) Unwrap() error { return e.err }

func indent(s string) string {
	return "    " + strings.ReplaceAll(s, "\n", "\n    ")
}

// query runs a read-only command (also in a dry run) and returns its trimmed stdout.
func (r *runner) query(ctx context.Context, name string, args ...string) (string, error) {
	var stdout, stderr bytes.Buffer
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return "", &commandError{cmd: name + " " + strings.Join(args, " "), err: err, tail: strings.TrimSpace(stderr.String())}
	}
	return strings.TrimSpace(stdout.String()), nil
}

// exec runs a command that changes something (pull, build, import, tag); in a dry run it only
// prints it. stdin may be nil. extraEnv entries are KEY=VALUE.
func (r *runner) exec(ctx context.Context, stdin io.Reader, extraEnv []string, name string, args ...string) error {
	line := shellLine(append([]string{name}, args...))
	if len(extraEnv) > 0 {
		line = strings.Join(extraEnv, " ") + " " + line
	}
	if r.dryRun {
		fmt.Fprintf(r.log, "+ %s\n", line)
		return nil
	}
	tail := &tailBuffer{max: 16 << 10}
	prog := &progress{}
	out := io.MultiWriter(tail, prog, r.buildLog)
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Stdin = stdin
	cmd.Stdout, cmd.Stderr = out, out
	cmd.Env = append(os.Environ(), extraEnv...)
	stop, reported := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(reported)
		reportProgress(r.log, commandSubject(name, args), prog, stop)
	}()
	err := cmd.Run()
	// The log is the caller's; nothing may write to it once exec returns.
	close(stop)
	<-reported
	if err != nil {
		if ctx.Err() != nil {
			err = errors.Join(err, ctx.Err())
		}
		return &commandError{cmd: line, err: err, tail: tail.lines(25)}
	}
	return nil
}

// imageID returns the ID of a local image, or "" when it is not present.
func (r *runner) imageID(ctx context.Context, ref string) (string, error) {
	out, err := r.query(ctx, r.docker, "image", "inspect", "--format", "{{.Id}}", ref)
	if err != nil {
		var ce *commandError
		if errors.As(err, &ce) && strings.Contains(strings.ToLower(ce.tail), "no such image") {
			return "", nil
		}
		return "", err
	}
	return out, nil
}

// shellLine quotes a command line the way a user would type it.
func shellLine(argv []string) string {
	quoted := make([]string, len(argv))
	for i, a := range argv {
		if a == "" || strings.ContainsAny(a, " \t\n'\"$`\\|&;<>()*?[]{}!#~") {
			a = "'" + strings.ReplaceAll(a, "'", `'\''`) + "'"
		}
		quoted[i] = a
	}
	return strings.Join(quoted, " ")
}

// registryUnreachable reports whether a failed pull's output means no registry answers at all
// (DNS failure, no route, timeout), as opposed to a registry that answered "no" (unknown tag,
// rate limit, auth), after which other pulls may still work.
func registryUnreachable(output string) bool {
	o := strings.ToLower(output)
	for _, s := range []string{
		"no such host", "temporary failure in name resolution", "server misbehaving",
		"network is unreachable", "no route to host", "connection refused", "i/o timeout",
		"tls handshake timeout", "context deadline exceeded", "dial tcp", "proxyconnect",
	} {
		if strings.Contains(o, s) {
			return true
		}
	}
	return false
}
