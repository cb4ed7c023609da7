package compose

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os/exec"
	"strings"
	"time"
)

// ErrDockerUnreachable is wrapped by every error that means "there is no Docker daemon to talk
// to" (no docker CLI, daemon down, socket not permitted). The CLI turns it into one line and exit
// status 2.
var ErrDockerUnreachable = errors.New("docker is unreachable")

// DockerUnreachableError says why the Docker daemon could not be reached.
type DockerUnreachableError struct {
	Docker string // the docker CLI that was tried
	Detail string // the first line the CLI printed, or the exec error
}

// Error is one line meant for the user.
func (e *DockerUnreachableError) Error() string {
	return fmt.Sprintf("cannot reach the Docker daemon with %q: %s", e.Docker, e.Detail)
}

// Unwrap makes errors.Is(err, ErrDockerUnreachable) true.
func (e *DockerUnreachableError) Unwrap() error { return ErrDockerUnreachable }

// CheckDocker asks the daemon for its version through the docker CLI (docker if empty) and returns
// that version, or a *DockerUnreachableError.
func CheckDocker(ctx context.Context, docker string) (string, error) {
	if docker == "" {
		docker = "docker"
	}
	if _, err := exec.LookPath(docker); err != nil {
		return "", &DockerUnreachableError{Docker: docker, Detail: "the docker CLI is not installed (not on PATH)"}
	}
	// A stuck daemon must not hang the run: the check is bounded.
	ctx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	var stdout, stderr bytes.Buffer
	cmd := exec.CommandContext(ctx, docker, "version", "--format", "{{.Server.Version}}")
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		detail := firstLine(stderr.String())
		if detail == "" {
			detail = err.Error()
		}
		if ctx.Err() != nil {
			detail = "no answer within 20s"
		}
		return "", &DockerUnreachableError{Docker: docker, Detail: detail}
	}
	version := strings.TrimSpace(stdout.String())
	if version == "" {
		return "", &DockerUnreachableError{Docker: docker, Detail: "the daemon reported no server version"}
	}
	return version, nil
}

// firstLine is the first non-empty line of s, trimmed.
func firstLine(s string) string {
	for _, line := range strings.Split(s, "\n") {
		if line = strings.TrimSpace(line); line != "" {
			return line
		}
	}
	return ""
}
