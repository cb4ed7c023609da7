package compose

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os/exec"
	"path/filepath"
	"strconv"
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

// ContainerState is what docker inspect says of a container after it ran: enough to tell an
// out-of-memory kill or a crash from a clean stop.
type ContainerState struct {
	ID           string
	Status       string // running, exited, dead, ...
	OOMKilled    bool
	ExitCode     int
	RestartCount int
	MemoryLimit  int64 // bytes; 0 when uncapped
}

// Inspect reads a container's state.
func (c *Client) Inspect(ctx context.Context, id string) (ContainerState, error) {
	out, err := c.docker(ctx, "inspect", "--format",
		"{{.State.Status}}|{{.State.OOMKilled}}|{{.State.ExitCode}}|{{.RestartCount}}|{{.HostConfig.Memory}}", id)
	if err != nil {
		return ContainerState{}, err
	}
	parts := strings.Split(out, "|")
	if len(parts) != 5 {
		return ContainerState{}, fmt.Errorf("docker inspect %s: unexpected output %q", id, out)
	}
	st := ContainerState{ID: id, Status: parts[0], OOMKilled: parts[1] == "true"}
	fmt.Sscan(parts[2], &st.ExitCode)
	fmt.Sscan(parts[3], &st.RestartCount)
	fmt.Sscan(parts[4], &st.MemoryLimit)
	return st, nil
}

// SetCPUSet moves a running container onto cpuset (docker update --cpuset-cpus) and reads the
// cpuset back, so that a daemon that took the call without applying it is caught.
func (c *Client) SetCPUSet(ctx context.Context, id, cpuset string) error {
	if _, err := c.docker(ctx, "update", "--cpuset-cpus", cpuset, id); err != nil {
		return err
	}
	got, err := c.docker(ctx, "inspect", "--format", "{{.HostConfig.CpusetCpus}}", id)
	if err != nil {
		return err
	}
	if got != cpuset {
		return fmt.Errorf("docker update %s: cpuset is %q, want %q", id, got, cpuset)
	}
	return nil
}

// Logs returns a container's whole log, stdout and stderr interleaved as docker keeps them.
func (c *Client) Logs(ctx context.Context, id string) ([]byte, error) {
	cmd := exec.CommandContext(ctx, c.opts.Docker, "logs", "--timestamps", id)
	out, err := cmd.CombinedOutput()
	if err != nil && ctx.Err() != nil {
		return out, ctx.Err()
	}
	return out, err
}

// ServiceIP is the address of service's container on the project's network, where the host
// reaches it directly (Linux routes to docker's bridges) without any published port.
func (c *Client) ServiceIP(ctx context.Context, service string) (string, error) {
	id, err := c.ContainerID(ctx, service)
	if err != nil {
		return "", err
	}
	if id == "" {
		return "", fmt.Errorf("%s has no container in project %s", service, c.opts.ProjectName)
	}
	return c.ContainerIP(ctx, id)
}

// ContainerIP is the address of container id on the project's network (or on any network it
// has, when not on the project's), as ServiceIP.
func (c *Client) ContainerIP(ctx context.Context, id string) (string, error) {
	out, err := c.docker(ctx, "inspect", "--format",
		"{{range $name, $net := .NetworkSettings.Networks}}{{$name}}={{$net.IPAddress}} {{end}}", id)
	if err != nil {
		return "", err
	}
	var any string
	for _, f := range strings.Fields(out) {
		name, ip, _ := strings.Cut(f, "=")
		if ip == "" {
			continue
		}
		if name == c.opts.ProjectName+"_default" {
			return ip, nil
		}
		any = ip
	}
	if any == "" {
		return "", fmt.Errorf("container %.12s has no network address", id)
	}
	return any, nil
}

// PublishedHostPort is the 127.0.0.1 port docker published for service's containerPort, or 0.
func (c *Client) PublishedHostPort(ctx context.Context, service string, containerPort int) (int, error) {
	id, err := c.ContainerID(ctx, service)
	if err != nil || id == "" {
		return 0, err
	}
	out, err := c.docker(ctx, "port", id, strconv.Itoa(containerPort)+"/tcp")
	if err != nil {
		return 0, nil
	}
	for _, line := range strings.Split(out, "\n") {
		if _, p, ok := strings.Cut(strings.TrimSpace(line), "127.0.0.1:"); ok {
			n, err := strconv.Atoi(p)
			if err == nil {
				return n, nil
			}
		}
	}
	return 0, nil
}

// ProjectContainers lists the project's containers (one-off tool runs included) as "id name".
func (c *Client) ProjectContainers(ctx context.Context) ([]string, error) {
	out, err := c.docker(ctx, "ps", "--all", "--no-trunc", "--format", "{{.ID}} {{.Names}}",
		"--filter", "label="+ProjectLabel+"="+c.opts.ProjectName)
	if err != nil {
		return nil, err
	}
	if out == "" {
		return nil, nil
	}
	return strings.Split(out, "\n"), nil
}

// ProjectLabel is the label compose v1 and v2 both put on every container of a project.
const ProjectLabel = "com.docker.compose.project"

// ForceRemove removes the project's containers at once (docker rm -f by our project label) and
// its network: the fast path of a cleanup that has no time for a graceful `down`.
func (c *Client) ForceRemove(ctx context.Context) error {
	lines, err := c.ProjectContainers(ctx)
	if err != nil {
		return err
	}
	if len(lines) > 0 {
		args := []string{"rm", "-f"}
		for _, l := range lines {
			args = append(args, strings.Fields(l)[0])
		}
		if _, err := c.docker(ctx, args...); err != nil {
			return err
		}
	}
	_, _ = c.docker(ctx, "network", "rm", c.opts.ProjectName+"_default")
	return nil
}

// CleanupHint is the shell command that removes whatever a project left behind.
func CleanupHint(docker, project string) string {
	return fmt.Sprintf("%s rm -f $(%s ps -aq --filter label=%s=%s); %s network rm %s_default",
		docker, docker, ProjectLabel, project, docker, project)
}

// PublishFile is the compose file that publishes Prometheus and Grafana on 127.0.0.1; without
// it the stack publishes nothing.
const PublishFile = "publish.yml"

// publishes reports whether this client's files include PublishFile.
func (c *Client) publishes() bool {
	for _, f := range c.files {
		if filepath.Base(f) == PublishFile {
			return true
		}
	}
	return false
}
