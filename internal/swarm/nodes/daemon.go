package nodes

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"
)

// start starts the node's dockerd in its namespaces and waits for its API.
func (n *Node) start(ctx context.Context, o Options) error {
	n.done.cgroup = true
	dir, err := n.makeDir(o)
	if err != nil {
		return err
	}
	n.DockerHost = "unix://" + filepath.Join(dir, "docker.sock")
	cfgPath, err := writeDaemonConfig(dir, o, n.cgroupParent)
	if err != nil {
		return err
	}
	logPath := filepath.Join(dir, "dockerd.log")
	logFile, err := os.Create(logPath)
	if err != nil {
		return fmt.Errorf("nodes: %w", err)
	}
	cmdline := "nsenter --net=/run/netns/" + n.Name + " unshare --mount --uts --propagation slave -- sh -c '...; exec dockerd ...'"
	n.c.logf("starting the dockerd of %s (DOCKER_HOST=%s, log %s)", n.Hostname, n.DockerHost, logPath)
	step := "start the dockerd of " + n.Hostname
	if err := n.launch(n.dockerdScript(dir, cfgPath), logFile); err != nil {
		return &StepError{Step: step, Cmd: cmdline, Err: err}
	}
	return n.waitAPI(ctx, o.StartTimeout, step, cmdline, logPath)
}

// makeDir makes the node's folder under o.Dir, with the daemon's data, exec and cgroup folders.
func (n *Node) makeDir(o Options) (string, error) {
	dir, err := os.MkdirTemp(o.Dir, n.Name+"-")
	if err != nil {
		return "", fmt.Errorf("nodes: %w", err)
	}
	n.Dir = dir
	n.done.dir = true
	for _, d := range []string{"data", "exec", "cgroup"} {
		if err := os.MkdirAll(filepath.Join(dir, d), 0o700); err != nil {
			return "", fmt.Errorf("nodes: %w", err)
		}
	}
	return dir, nil
}

// writeDaemonConfig writes the node's daemon.json into dir and returns its path. It is the
// node's own: without --config-file dockerd reads /etc/docker/daemon.json, the machine
// daemon's, and without deprecated-key-path it shares /etc/docker/key.json.
func writeDaemonConfig(dir string, o Options, cgroupParent string) (string, error) {
	cfg := map[string]any{
		"storage-driver":        o.StorageDriver,
		"bip":                   o.BridgeIP,
		"default-address-pools": []map[string]any{{"base": o.AddressPool, "size": 24}},
		"cgroup-parent":         cgroupParent,
		"deprecated-key-path":   filepath.Join(dir, "key.json"),
		"log-driver":            "json-file",
		"insecure-registries":   o.InsecureRegistries,
	}
	b, _ := json.MarshalIndent(cfg, "", "  ")
	cfgPath := filepath.Join(dir, "daemon.json")
	if err := os.WriteFile(cfgPath, b, 0o600); err != nil {
		return "", fmt.Errorf("nodes: %w", err)
	}
	return cfgPath, nil
}

// dockerdScript is the shell script that becomes the node's dockerd. In a mount namespace of its
// own (slave, so nothing propagates back) it binds the cgroup tree aside, mounts the namespace's
// sysfs, binds the cgroup tree back, sets the hostname, and execs dockerd.
//
// Services that bind-mount the docker socket or data root (cAdvisor, Prometheus' service
// discovery) must find the node's daemon there, as on a host of its own: /run gets a tmpfs of
// its own in the namespace, where the daemon listens on /run/docker.sock besides
// Dir/docker.sock (the one the host reaches), and the data root is bound over /var/lib/docker.
// The daemon's own paths all stay under Dir, so if a mount failed it could still never use the
// machine daemon's.
func (n *Node) dockerdScript(dir, cfgPath string) string {
	cg := filepath.Join(dir, "cgroup")
	data := filepath.Join(dir, "data")
	return strings.Join([]string{
		"set -e",
		"mount --rbind /sys/fs/cgroup " + cg,
		"mount -t sysfs sysfs /sys",
		"mount --rbind " + cg + " /sys/fs/cgroup",
		"umount -l " + cg,
		"mount -t tmpfs -o mode=755 tmpfs /run",
		"ln -s /dev/shm /run/shm",
		"mount --bind " + data + " /var/lib/docker",
		"hostname " + n.Hostname,
		"exec dockerd --config-file " + cfgPath +
			" --data-root " + data +
			" --exec-root " + filepath.Join(dir, "exec") +
			" --pidfile " + filepath.Join(dir, "docker.pid") +
			" -H " + n.DockerHost + " -H unix:///run/docker.sock",
	}, "\n")
}

// launch runs script in the node's network namespace and new mount and UTS namespaces, its
// output to logFile, which it closes. nsenter, unshare and sh exec in turn, so the PID is
// dockerd's.
func (n *Node) launch(script string, logFile *os.File) error {
	args := []string{"--net=/run/netns/" + n.Name, "unshare", "--mount", "--uts", "--propagation", "slave", "--", "sh", "-c", script}
	cmd := exec.Command("nsenter", args...)
	cmd.Stdout, cmd.Stderr = logFile, logFile
	if err := cmd.Start(); err != nil {
		logFile.Close()
		return err
	}
	logFile.Close()
	n.cmd, n.PID, n.exited = cmd, cmd.Process.Pid, make(chan struct{})
	n.done.daemon = true
	go func() { _ = cmd.Wait(); close(n.exited) }()
	return nil
}

// waitAPI waits until the node's daemon answers, failing when it exits, ctx ends or timeout
// passes; the failure carries the end of its log.
func (n *Node) waitAPI(ctx context.Context, timeout time.Duration, step, cmdline, logPath string) error {
	deadline := time.Now().Add(timeout)
	for {
		select {
		case <-n.exited:
			return &StepError{Step: step, Cmd: cmdline,
				Err: fmt.Errorf("it exited: %v", n.cmd.ProcessState), Output: tail(logPath, 15)}
		case <-ctx.Done():
			return &StepError{Step: step, Cmd: cmdline, Err: ctx.Err(), Output: tail(logPath, 15)}
		case <-time.After(250 * time.Millisecond):
		}
		out, err := n.docker(ctx, "version", "--format", "{{.Server.Version}}")
		if err == nil {
			n.c.logf("dockerd %s of %s up (pid %d)", out, n.Hostname, n.PID)
			return nil
		}
		if time.Now().After(deadline) {
			return &StepError{Step: step, Cmd: cmdline,
				Err: fmt.Errorf("its API did not answer within %s", timeout), Output: tail(logPath, 15)}
		}
	}
}
