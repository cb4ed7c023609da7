package obsbench

import (
	"context"
	"encoding/json"
	"fmt"
	"os/exec"
	"slices"
	"strconv"
	"strings"
)

// The bench's own docker calls read or freeze containers the engine started, and remove its
// project's volumes once the engine has taken the project down; none makes a container.
// Pausing is how the bench switches the stack off without a restart (the engine's runs never
// pause anything, and a swarm could not pause a task honestly), and inspect reads back what a
// container was given and which ID a tool container got.

// setPaused pauses or unpauses a container, unless it is already so.
func setPaused(ctx context.Context, id string, pause bool) error {
	state, err := docker(ctx, "inspect", "-f", "{{.State.Paused}}", id)
	if err != nil {
		return err
	}
	if (state == "true") == pause {
		return nil
	}
	verb := "unpause"
	if pause {
		verb = "pause"
	}
	_, err = docker(ctx, verb, id)
	return err
}

// containerID is the full ID of the container named name, or "" while there is none.
func containerID(ctx context.Context, name string) string {
	id, _ := docker(ctx, "inspect", "-f", "{{.Id}}", name)
	return id
}

// inspected is what containerSettings reads of a container.
type inspected struct {
	Config struct {
		Image      string
		Entrypoint []string
		Cmd        []string
	}
	HostConfig struct {
		NetworkMode string
		CpusetCpus  string
		CpuShares   int64
		NanoCpus    int64
		Memory      int64
	}
	Mounts []mount
}

type mount struct {
	Source, Destination string
	RW                  bool
}

// containerSettings is what a running container was given, read back from the daemon and
// spelled as docker run flags, so that it reads beside a docker run line.
func containerSettings(ctx context.Context, id string) (string, error) {
	out, err := docker(ctx, "inspect", id)
	if err != nil {
		return "", err
	}
	var got []inspected
	if err := json.Unmarshal([]byte(out), &got); err != nil || len(got) != 1 {
		return "", fmt.Errorf("docker inspect %.12s: %v", id, err)
	}
	return got[0].flags(), nil
}

func (c inspected) flags() string {
	h := c.HostConfig
	f := []string{"--network", h.NetworkMode}
	if h.CpusetCpus != "" {
		f = append(f, "--cpuset-cpus", h.CpusetCpus)
	}
	if h.CpuShares != 0 {
		f = append(f, "--cpu-shares", strconv.FormatInt(h.CpuShares, 10))
	}
	if h.NanoCpus != 0 {
		f = append(f, "--cpus", strconv.FormatFloat(float64(h.NanoCpus)/1e9, 'f', -1, 64))
	}
	if h.Memory != 0 {
		f = append(f, "--memory", strconv.FormatInt(h.Memory, 10))
	}
	mounts := slices.Clone(c.Mounts)
	slices.SortFunc(mounts, func(a, b mount) int { return strings.Compare(a.Destination, b.Destination) })
	for _, m := range mounts {
		mode := "ro"
		if m.RW {
			mode = "rw"
		}
		f = append(f, "-v", m.Source+":"+m.Destination+":"+mode)
	}
	if len(c.Config.Entrypoint) > 0 {
		f = append(f, "--entrypoint", strings.Join(c.Config.Entrypoint, " "))
	}
	f = append(f, c.Config.Image)
	return strings.Join(append(f, c.Config.Cmd...), " ")
}

// removeVolumes removes the volumes of compose project project, which compose labels with it:
// a run's Prometheus data is of no use once the run ends, and compose down keeps volumes, so
// they would pile up, one per run.
func removeVolumes(ctx context.Context, project string) error {
	names, err := docker(ctx, "volume", "ls", "--quiet", "--filter", "label=com.docker.compose.project="+project)
	if err != nil || names == "" {
		return err
	}
	_, err = docker(ctx, append([]string{"volume", "rm"}, strings.Fields(names)...)...)
	return err
}

// docker runs the docker CLI and returns its trimmed stdout.
func docker(ctx context.Context, args ...string) (string, error) {
	out, err := exec.CommandContext(ctx, "docker", args...).Output()
	if err != nil {
		detail := err.Error()
		if ee, ok := err.(*exec.ExitError); ok {
			detail = strings.TrimSpace(string(ee.Stderr))
		}
		return "", fmt.Errorf("docker %s: %s", strings.Join(args[:min(len(args), 2)], " "), detail)
	}
	return strings.TrimSpace(string(out)), nil
}
