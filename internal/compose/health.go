package compose

import (
	"context"
	"fmt"
	"os/exec"
	"strings"
	"time"
)

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
