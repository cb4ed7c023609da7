package swarm

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"os/exec"
	"sort"
	"strings"
	"time"
)

// ServiceName is the swarm service of a compose service: <project>-<service>.
func (c *Client) ServiceName(service string) string { return c.Project + "-" + service }

// CreateService creates the service spec describes and returns its ID; it does not wait for
// its tasks.
func (c *Client) CreateService(ctx context.Context, spec ServiceSpec) (string, error) {
	out, err := c.run(ctx, c.owned(spec).CreateArgs()...)
	if err != nil {
		return "", err
	}
	return strings.TrimSpace(out), nil
}

// owned is spec with the project's label on the service and its containers, by which List and
// RemoveAll find everything of the project's.
func (c *Client) owned(spec ServiceSpec) ServiceSpec {
	withProject := func(m map[string]string) map[string]string {
		out := map[string]string{}
		maps.Copy(out, m)
		out[ProjectLabel] = c.Project
		return out
	}
	spec.Labels, spec.ContainerLabels = withProject(spec.Labels), withProject(spec.ContainerLabels)
	return spec
}

// StopService scales a replicated service to no tasks and waits until its task has stopped, on
// whichever node it ran: `service rm` alone returns while the container is still stopping, and
// a server still shutting down would share the node with the next run's.
func (c *Client) StopService(ctx context.Context, name string) error {
	if _, err := c.run(ctx, "service", "scale", "--detach", name+"=0"); err != nil {
		return err
	}
	// Scaled down, a task is marked for removal and leaves the list once its container has
	// stopped; a task that had ended already stays, terminal.
	for {
		tasks, err := c.Tasks(ctx, name)
		stopped := err == nil
		for _, t := range tasks {
			stopped = stopped && t.Terminal()
		}
		if stopped {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("service %s: its task has not stopped: %w", name, ctx.Err())
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// RemoveService removes a service (its tasks' containers go with it); a missing one is no error.
func (c *Client) RemoveService(ctx context.Context, name string) error {
	out, err := c.run(ctx, "service", "rm", name)
	if err != nil && !strings.Contains(out+err.Error(), "not found") {
		return err
	}
	return nil
}

// Task is one task of a service.
type Task struct {
	ID           string
	NodeID       string
	State        string // new ... running, complete, failed, shutdown, rejected, orphaned
	DesiredState string
	Message, Err string
	ContainerID  string
	ExitCode     int
	Timestamp    time.Time
}

// Terminal says whether a task has finished for good.
func (t Task) Terminal() bool {
	switch t.State {
	case "complete", "failed", "shutdown", "rejected", "orphaned", "remove":
		return true
	}
	return false
}

// Tasks lists a service's tasks, newest first.
func (c *Client) Tasks(ctx context.Context, service string) ([]Task, error) {
	ids, err := c.run(ctx, "service", "ps", "-q", "--no-trunc", service)
	if err != nil {
		return nil, err
	}
	if strings.TrimSpace(ids) == "" {
		return nil, nil
	}
	out, err := c.run(ctx, append([]string{"inspect", "--type", "task"}, strings.Fields(ids)...)...)
	if err != nil {
		return nil, err
	}
	var raw []struct {
		ID, NodeID, DesiredState string
		Status                   struct {
			Timestamp       time.Time
			State, Message  string
			Err             string
			ContainerStatus struct {
				ContainerID string
				ExitCode    int
			}
		}
	}
	if err := json.Unmarshal([]byte(out), &raw); err != nil {
		return nil, fmt.Errorf("docker inspect tasks of %s: %w", service, err)
	}
	tasks := make([]Task, 0, len(raw))
	for _, r := range raw {
		tasks = append(tasks, Task{
			ID: r.ID, NodeID: r.NodeID, State: r.Status.State, DesiredState: r.DesiredState,
			Message: r.Status.Message, Err: r.Status.Err, ContainerID: r.Status.ContainerStatus.ContainerID,
			ExitCode: r.Status.ContainerStatus.ExitCode, Timestamp: r.Status.Timestamp,
		})
	}
	sort.SliceStable(tasks, func(i, j int) bool { return tasks[i].Timestamp.After(tasks[j].Timestamp) })
	return tasks, nil
}

// WaitTask polls service's newest task until done says so, every 100 ms at first.
func (c *Client) WaitTask(ctx context.Context, service string, done func(Task) bool) (Task, error) {
	pause := 100 * time.Millisecond
	for {
		tasks, err := c.Tasks(ctx, service)
		if err != nil && ctx.Err() != nil {
			return Task{}, ctx.Err()
		}
		if err == nil && len(tasks) > 0 && done(tasks[0]) {
			return tasks[0], nil
		}
		select {
		case <-ctx.Done():
			if len(tasks) > 0 {
				return tasks[0], fmt.Errorf("service %s: task %s still %s: %w", service, shortID(tasks[0].ID), tasks[0].State, ctx.Err())
			}
			return Task{}, fmt.Errorf("service %s: no task yet: %w", service, ctx.Err())
		case <-time.After(pause):
		}
		if pause < 500*time.Millisecond {
			pause += 100 * time.Millisecond
		}
	}
}

// Running waits for service's task to run, and fails at once when it ended instead (with the
// swarm's reason: an image missing on the node, a constraint no node meets, ...).
func (c *Client) Running(ctx context.Context, service string) (Task, error) {
	t, err := c.WaitTask(ctx, service, func(t Task) bool { return t.State == "running" || t.Terminal() })
	if err != nil {
		if t.State == "pending" {
			return t, fmt.Errorf("%w (pending: %s; a placement constraint no node meets, or too little CPU or memory left on the nodes)", err, t.Err)
		}
		return t, err
	}
	if t.State != "running" {
		return t, fmt.Errorf("service %s: task %s %s before it ran: %s", service, shortID(t.ID), t.State, taskReason(t))
	}
	return t, nil
}

func taskReason(t Task) string {
	if t.Err != "" {
		return t.Err
	}
	return t.Message
}

// Logs returns a service's stdout and stderr as its tasks wrote them (--raw: no task prefix).
func (c *Client) Logs(ctx context.Context, service string) ([]byte, []byte, error) {
	cmd := exec.CommandContext(ctx, c.Docker, "service", "logs", "--raw", service)
	out := &cappedBuffer{max: MaxTransferLog}
	errOut := &cappedBuffer{max: MaxTransferFile}
	cmd.Stdout, cmd.Stderr = out, errOut
	if err := cmd.Run(); err != nil {
		if out.over {
			return nil, errOut.Bytes(), fmt.Errorf("docker service logs %s: the log is over %d bytes, more than a tool's transfer may be (swarm.MaxTransferLog)", service, int64(MaxTransferLog))
		}
		return out.Bytes(), errOut.Bytes(), fmt.Errorf("docker service logs %s: %v: %s", service, err, firstLine(errOut.String()))
	}
	return out.Bytes(), errOut.Bytes(), nil
}

// cappedBuffer is a bytes.Buffer that refuses to grow past max: the write fails, so the
// command writing into it stops.
type cappedBuffer struct {
	bytes.Buffer
	max  int64
	over bool
}

func (b *cappedBuffer) Write(p []byte) (int, error) {
	if int64(b.Len()+len(p)) > b.max {
		b.over = true
		return 0, errors.New("output over its cap")
	}
	return b.Buffer.Write(p)
}
