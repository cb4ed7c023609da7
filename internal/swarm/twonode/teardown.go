package twonode

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// Close undoes everything in reverse: the node leaves the swarm and is removed from the
// manager's list, the second dockerd (and its containerd, and any process left in its cgroup
// parent) is stopped by PID, and the namespace, the veth pair, the cgroup parent and the
// directory are removed. It goes on after a failed step and returns all the errors. Calling it
// again does nothing.
func (c *Cluster) Close(ctx context.Context) error {
	if c.closed {
		return nil
	}
	c.closed = true
	did := c.done != (struct{ netns, veth, dir, daemon, joined, cgroup bool }{})
	var errs []error
	if c.done.joined {
		c.done.joined = false
		if _, err := c.node(ctx, "swarm", "leave", "--force"); err != nil {
			errs = append(errs, err)
		}
		if c.NodeID != "" {
			errs = append(errs, c.removeNode(ctx))
		}
	}
	if c.done.daemon {
		c.done.daemon = false
		errs = append(errs, c.stopDaemon())
	}
	if c.done.cgroup {
		c.done.cgroup = false
		errs = append(errs, c.removeCgroups())
	}
	if c.done.netns {
		c.done.netns = false
		if _, err := c.run(ctx, "remove the network namespace", nil, "ip", "netns", "del", c.Name); err != nil {
			errs = append(errs, err)
		}
	}
	if c.done.veth {
		c.done.veth = false
		// Deleting the namespace deletes the peer inside it and with it the host end, but the
		// kernel tears a namespace down asynchronously (seconds here, after the overlay's
		// VXLAN devices go). Remove the host end by hand only when it outlives that.
		for i := 0; i < 60; i++ {
			if _, err := net.InterfaceByName(c.HostVeth); err != nil {
				break
			}
			time.Sleep(250 * time.Millisecond)
		}
		if _, err := net.InterfaceByName(c.HostVeth); err == nil {
			if _, err := c.run(ctx, "remove the veth pair", nil, "ip", "link", "del", c.HostVeth); err != nil {
				errs = append(errs, err)
			}
		}
	}
	if c.done.dir {
		c.done.dir = false
		// Never recurse into a mounted filesystem: the daemon's mounts lived in its own mount
		// namespace, so on the host there should be none under Dir.
		if m := mountsUnder(c.Dir); len(m) > 0 {
			errs = append(errs, fmt.Errorf("twonode: %s left in place: mounts under it on the host: %s", c.Dir, strings.Join(m, ", ")))
		} else if err := os.RemoveAll(c.Dir); err != nil {
			errs = append(errs, fmt.Errorf("twonode: %w", err))
		}
	}
	if err := errors.Join(errs...); err != nil {
		return err
	}
	if did {
		c.logf("second node %s removed", c.Hostname)
	}
	return nil
}

func (c *Cluster) removeNode(ctx context.Context) error {
	// The manager refuses to remove a node it still sees up; after a leave it turns "down"
	// within a few seconds. --force removes it even if it never does.
	for i := 0; i < 40; i++ {
		state, err := c.run(ctx, "read the second node's state", nil, c.docker, "node", "inspect", "--format", "{{.Status.State}}", c.NodeID)
		if err != nil && strings.Contains(state, "No such node") || state == "down" {
			break
		}
		time.Sleep(250 * time.Millisecond)
	}
	out, err := c.run(ctx, "remove the second node from the manager", nil, c.docker, "node", "rm", "--force", c.NodeID)
	if err != nil && strings.Contains(out, "not found") {
		return nil
	}
	return err
}

// stopDaemon stops the second dockerd by its PID: SIGTERM, which stops its containers and its
// containerd, then SIGKILL after 30 s, then the containerd and shims it left, found by the
// exec root in their command lines.
func (c *Cluster) stopDaemon() error {
	if c.cmd == nil || c.cmd.Process == nil {
		return nil
	}
	_ = c.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-c.exited:
	case <-time.After(30 * time.Second):
		c.logf("second dockerd (pid %d) still running 30 s after SIGTERM; killing it", c.PID)
		_ = c.cmd.Process.Kill()
		<-c.exited
	}
	c.logf("second dockerd (pid %d) stopped", c.PID)
	c.PID = 0
	var errs []error
	// Only processes whose command line names this node's exec root are ours.
	for _, pid := range processesMentioning(filepath.Join(c.Dir, "exec")) {
		c.logf("killing pid %d left by the second dockerd", pid)
		if err := syscall.Kill(pid, syscall.SIGKILL); err != nil && !errors.Is(err, syscall.ESRCH) {
			errs = append(errs, fmt.Errorf("twonode: kill %d: %w", pid, err))
		}
	}
	return errors.Join(errs...)
}

// removeCgroups kills what is left in the node's cgroup parent (its containers' processes,
// only there when the daemon died without stopping them) and removes the parent's directories.
func (c *Cluster) removeCgroups() error {
	dirs, _ := filepath.Glob(filepath.Join("/sys/fs/cgroup", "*", strings.TrimPrefix(c.cgroupParent, "/")))
	var errs []error
	for _, d := range dirs {
		_ = filepath.Walk(d, func(p string, info os.FileInfo, err error) error {
			if err != nil || info.Name() != "cgroup.procs" {
				return nil
			}
			b, _ := os.ReadFile(p)
			for _, f := range strings.Fields(string(b)) {
				if pid, err := strconv.Atoi(f); err == nil {
					_ = syscall.Kill(pid, syscall.SIGKILL)
				}
			}
			return nil
		})
	}
	for _, d := range dirs {
		// Children first: a cgroup directory is removed with rmdir once it has no processes.
		var sub []string
		_ = filepath.Walk(d, func(p string, info os.FileInfo, err error) error {
			if err == nil && info.IsDir() {
				sub = append(sub, p)
			}
			return nil
		})
		for i := len(sub) - 1; i >= 0; i-- {
			var err error
			for try := 0; try < 20; try++ {
				if err = syscall.Rmdir(sub[i]); err == nil || errors.Is(err, syscall.ENOENT) {
					err = nil
					break
				}
				time.Sleep(100 * time.Millisecond)
			}
			if err != nil {
				errs = append(errs, fmt.Errorf("twonode: rmdir %s: %w", sub[i], err))
			}
		}
	}
	return errors.Join(errs...)
}
