package nodes

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

// Close undoes everything in reverse: each node, the last first, leaves the swarm and is
// removed from the manager's list, its dockerd (and its containerd, and any process left in its
// cgroup parent) is stopped by PID, and its namespace, cgroup parent and directory are removed;
// then the LAN's namespace goes, and with it the host's veth. It goes on after a failed step
// and returns all the errors. Calling it again does nothing.
func (c *Cluster) Close(ctx context.Context) error {
	if c.closed {
		return nil
	}
	c.closed = true
	var errs []error
	for i := len(c.Nodes) - 1; i >= 0; i-- {
		errs = append(errs, c.Nodes[i].close(ctx))
	}
	did := c.done.lan || c.done.hostVeth
	if c.done.lan {
		c.done.lan = false
		if _, err := c.run(ctx, "remove the LAN's network namespace", "ip", "netns", "del", c.Name); err != nil {
			errs = append(errs, err)
		}
	}
	if c.done.hostVeth {
		c.done.hostVeth = false
		// Deleting the LAN's namespace deletes the veth's end inside it and with it the host's,
		// but the kernel tears a namespace down asynchronously (seconds here). Remove the host's
		// end by hand only when it outlives that.
		for i := 0; i < 60; i++ {
			if _, err := net.InterfaceByName(c.HostVeth); err != nil {
				break
			}
			time.Sleep(250 * time.Millisecond)
		}
		if _, err := net.InterfaceByName(c.HostVeth); err == nil {
			if _, err := c.run(ctx, "remove the host's veth", "ip", "link", "del", c.HostVeth); err != nil {
				errs = append(errs, err)
			}
		}
	}
	if err := errors.Join(errs...); err != nil {
		return err
	}
	if did {
		c.logf("LAN %s removed", c.Name)
	}
	return nil
}

// close undoes what was done for one node.
func (n *Node) close(ctx context.Context) error {
	c := n.c
	did := n.done != (struct{ netns, dir, daemon, joined, cgroup bool }{})
	var errs []error
	if n.done.joined {
		n.done.joined = false
		if _, err := n.docker(ctx, "swarm", "leave", "--force"); err != nil {
			errs = append(errs, err)
		}
		if n.NodeID != "" {
			errs = append(errs, n.removeNode(ctx))
		}
	}
	if n.done.daemon {
		n.done.daemon = false
		errs = append(errs, n.stopDaemon())
	}
	if n.done.cgroup {
		n.done.cgroup = false
		errs = append(errs, n.removeCgroups())
	}
	if n.done.netns {
		n.done.netns = false
		if _, err := c.run(ctx, "remove the network namespace of "+n.Hostname, "ip", "netns", "del", n.Name); err != nil {
			errs = append(errs, err)
		}
	}
	if n.done.dir {
		n.done.dir = false
		// Never recurse into a mounted filesystem: the daemon's mounts lived in its own mount
		// namespace, so on the host there should be none under Dir.
		if m := mountsUnder(n.Dir); len(m) > 0 {
			errs = append(errs, fmt.Errorf("nodes: %s left in place: mounts under it on the host: %s", n.Dir, strings.Join(m, ", ")))
		} else if err := os.RemoveAll(n.Dir); err != nil {
			errs = append(errs, fmt.Errorf("nodes: %w", err))
		}
	}
	if err := errors.Join(errs...); err != nil {
		return err
	}
	if did {
		c.logf("node %s removed", n.Hostname)
	}
	return nil
}

func (n *Node) removeNode(ctx context.Context) error {
	c := n.c
	// The manager refuses to remove a node it still sees up; after a leave it turns "down"
	// within a few seconds. --force removes it even if it never does.
	for i := 0; i < 40; i++ {
		state, err := c.run(ctx, "read the state of "+n.Hostname, c.docker, "node", "inspect", "--format", "{{.Status.State}}", n.NodeID)
		if err != nil && strings.Contains(state, "No such node") || state == "down" {
			break
		}
		time.Sleep(250 * time.Millisecond)
	}
	out, err := c.run(ctx, "remove "+n.Hostname+" from the manager", c.docker, "node", "rm", "--force", n.NodeID)
	if err != nil && strings.Contains(out, "not found") {
		return nil
	}
	return err
}

// stopDaemon stops the node's dockerd by its PID: SIGTERM, which stops its containers and its
// containerd, then SIGKILL after 30 s, then the containerd and shims it left, found by the
// exec root in their command lines.
func (n *Node) stopDaemon() error {
	c := n.c
	if n.cmd == nil || n.cmd.Process == nil {
		return nil
	}
	_ = n.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-n.exited:
	case <-time.After(30 * time.Second):
		c.logf("dockerd of %s (pid %d) still running 30 s after SIGTERM; killing it", n.Hostname, n.PID)
		_ = n.cmd.Process.Kill()
		<-n.exited
	}
	c.logf("dockerd of %s (pid %d) stopped", n.Hostname, n.PID)
	n.PID = 0
	var errs []error
	// Only processes whose command line names this node's exec root are ours.
	for _, pid := range processesMentioning(filepath.Join(n.Dir, "exec")) {
		c.logf("killing pid %d left by the dockerd of %s", pid, n.Hostname)
		if err := syscall.Kill(pid, syscall.SIGKILL); err != nil && !errors.Is(err, syscall.ESRCH) {
			errs = append(errs, fmt.Errorf("nodes: kill %d: %w", pid, err))
		}
	}
	return errors.Join(errs...)
}

// removeCgroups kills what is left in the node's cgroup parent (its containers' processes,
// only there when the daemon died without stopping them) and removes the parent's directories.
func (n *Node) removeCgroups() error {
	dirs, _ := filepath.Glob(filepath.Join("/sys/fs/cgroup", "*", strings.TrimPrefix(n.cgroupParent, "/")))
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
				errs = append(errs, fmt.Errorf("nodes: rmdir %s: %w", sub[i], err))
			}
		}
	}
	return errors.Join(errs...)
}
