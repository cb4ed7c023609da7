package twonode

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"
)

func (c *Cluster) prepare(ctx context.Context, o Options) error {
	for _, a := range []string{c.HostAddr, c.NodeAddr} {
		if ip := net.ParseIP(a); ip == nil || ip.To4() == nil {
			return fmt.Errorf("twonode: %q is not an IPv4 address", a)
		}
	}
	// Refuse names and addresses that are in use: they belong to someone else, and Close
	// would remove them.
	if _, err := os.Stat("/run/netns/" + c.Name); err == nil {
		return fmt.Errorf("twonode: network namespace %s exists already (another run's, or a leftover: `ip netns del %s` if it is yours)", c.Name, c.Name)
	}
	if _, err := net.InterfaceByName(c.HostVeth); err == nil {
		return fmt.Errorf("twonode: interface %s exists already (another run's, or a leftover: `ip link del %s` if it is yours)", c.HostVeth, c.HostVeth)
	}
	if owner := addrOwner(c.HostAddr); owner != "" {
		return fmt.Errorf("twonode: %s is already on interface %s; choose other addresses (Options.HostAddr, NodeAddr)", c.HostAddr, owner)
	}
	// Close kills what is left in the cgroup parent and removes it, so it must be new: never
	// the machine daemon's (/docker) or anyone else's.
	if dirs, _ := filepath.Glob(filepath.Join("/sys/fs/cgroup", "*", strings.TrimPrefix(c.cgroupParent, "/"))); len(dirs) > 0 {
		return fmt.Errorf("twonode: cgroup %s exists already (another run's, or a leftover: rmdir %s if it is yours and empty)", c.cgroupParent, strings.Join(dirs, " "))
	}
	c.done.cgroup = true
	if o.StorageDriver == "" {
		out, err := c.run(ctx, "read the storage driver of this machine's daemon", nil, c.docker, "info", "--format", "{{.Driver}}")
		if err != nil {
			return err
		}
		o.StorageDriver = out
	}

	c.logf("network namespace %s, veth %s (%s, host) <-> %s (%s, namespace)", c.Name, c.HostVeth, c.HostAddr, c.NodeVeth, c.NodeAddr)
	if _, err := c.run(ctx, "create the network namespace", nil, "ip", "netns", "add", c.Name); err != nil {
		return err
	}
	c.done.netns = true
	steps := [][]string{
		{"ip", "link", "add", c.HostVeth, "type", "veth", "peer", "name", c.NodeVeth},
		{"ip", "link", "set", c.NodeVeth, "netns", c.Name},
		{"ip", "addr", "add", c.HostAddr + "/30", "dev", c.HostVeth},
		{"ip", "link", "set", c.HostVeth, "up"},
		{"ip", "-n", c.Name, "addr", "add", c.NodeAddr + "/30", "dev", c.NodeVeth},
		{"ip", "-n", c.Name, "link", "set", c.NodeVeth, "up"},
		{"ip", "-n", c.Name, "link", "set", "lo", "up"},
	}
	for i, s := range steps {
		if _, err := c.run(ctx, "wire the veth pair", nil, s[0], s[1:]...); err != nil {
			return err
		}
		if i == 0 {
			c.done.veth = true
		}
	}

	dir, err := os.MkdirTemp(o.Dir, c.Name+"-")
	if err != nil {
		return fmt.Errorf("twonode: %w", err)
	}
	c.Dir = dir
	c.done.dir = true
	for _, d := range []string{"data", "exec", "cgroup"} {
		if err := os.MkdirAll(filepath.Join(dir, d), 0o700); err != nil {
			return fmt.Errorf("twonode: %w", err)
		}
	}
	sock := filepath.Join(dir, "docker.sock")
	c.DockerHost = "unix://" + sock
	// daemon.json of its own: without --config-file dockerd reads /etc/docker/daemon.json,
	// the machine daemon's, and without deprecated-key-path it shares /etc/docker/key.json.
	cfg := map[string]any{
		"storage-driver":        o.StorageDriver,
		"bip":                   o.BridgeIP,
		"default-address-pools": []map[string]any{{"base": o.AddressPool, "size": 24}},
		"cgroup-parent":         c.cgroupParent,
		"deprecated-key-path":   filepath.Join(dir, "key.json"),
		"log-driver":            "json-file",
		"insecure-registries":   o.InsecureRegistries,
	}
	b, _ := json.MarshalIndent(cfg, "", "  ")
	cfgPath := filepath.Join(dir, "daemon.json")
	if err := os.WriteFile(cfgPath, b, 0o600); err != nil {
		return fmt.Errorf("twonode: %w", err)
	}

	// In a mount namespace of its own (slave, so nothing propagates back): bind the cgroup tree
	// aside, mount the namespace's sysfs, bind the cgroup tree back, set the hostname, and
	// become dockerd. nsenter, unshare and sh exec in turn, so the PID is dockerd's.
	//
	// Services that bind-mount the docker socket or data root (cAdvisor, Prometheus' service
	// discovery) must find the second daemon's there, as on a host of its own: /run gets a
	// tmpfs of its own in the namespace, where the daemon listens on /run/docker.sock besides
	// Dir/docker.sock (the one the host reaches), and the data root is bound over
	// /var/lib/docker. The daemon's own paths all stay under Dir, so if a mount failed it could
	// still never use the machine daemon's.
	cg := filepath.Join(dir, "cgroup")
	data := filepath.Join(dir, "data")
	script := strings.Join([]string{
		"set -e",
		"mount --rbind /sys/fs/cgroup " + cg,
		"mount -t sysfs sysfs /sys",
		"mount --rbind " + cg + " /sys/fs/cgroup",
		"umount -l " + cg,
		"mount -t tmpfs -o mode=755 tmpfs /run",
		"ln -s /dev/shm /run/shm",
		"mount --bind " + data + " /var/lib/docker",
		"hostname " + c.Hostname,
		"exec dockerd --config-file " + cfgPath +
			" --data-root " + data +
			" --exec-root " + filepath.Join(dir, "exec") +
			" --pidfile " + filepath.Join(dir, "docker.pid") +
			" -H " + c.DockerHost + " -H unix:///run/docker.sock",
	}, "\n")
	logPath := filepath.Join(dir, "dockerd.log")
	logFile, err := os.Create(logPath)
	if err != nil {
		return fmt.Errorf("twonode: %w", err)
	}
	args := []string{"--net=/run/netns/" + c.Name, "unshare", "--mount", "--uts", "--propagation", "slave", "--", "sh", "-c", script}
	cmd := exec.Command("nsenter", args...)
	cmd.Stdout, cmd.Stderr = logFile, logFile
	cmdline := "nsenter --net=/run/netns/" + c.Name + " unshare --mount --uts --propagation slave -- sh -c '...; exec dockerd ...'"
	c.logf("starting the second dockerd (hostname %s, DOCKER_HOST=%s, log %s)", c.Hostname, c.DockerHost, logPath)
	if err := cmd.Start(); err != nil {
		logFile.Close()
		return &StepError{Step: "start the second dockerd", Cmd: cmdline, Err: err}
	}
	logFile.Close()
	c.cmd, c.PID, c.exited = cmd, cmd.Process.Pid, make(chan struct{})
	c.done.daemon = true
	go func() { _ = cmd.Wait(); close(c.exited) }()

	deadline := time.Now().Add(o.StartTimeout)
	for {
		select {
		case <-c.exited:
			return &StepError{Step: "start the second dockerd", Cmd: cmdline,
				Err: fmt.Errorf("it exited: %v", cmd.ProcessState), Output: tail(logPath, 15)}
		case <-ctx.Done():
			return &StepError{Step: "start the second dockerd", Cmd: cmdline, Err: ctx.Err(), Output: tail(logPath, 15)}
		case <-time.After(250 * time.Millisecond):
		}
		out, err := c.node(ctx, "version", "--format", "{{.Server.Version}}")
		if err == nil {
			c.logf("second dockerd %s up (pid %d)", out, c.PID)
			return nil
		}
		if time.Now().After(deadline) {
			return &StepError{Step: "start the second dockerd", Cmd: cmdline,
				Err: fmt.Errorf("its API did not answer within %s", o.StartTimeout), Output: tail(logPath, 15)}
		}
	}
}
