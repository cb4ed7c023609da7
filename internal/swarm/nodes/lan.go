package nodes

import (
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
)

// lanBridge is the switch's name inside the LAN's namespace, and lanHost the LAN's end of the
// host's veth pair; names inside a namespace of our own cannot clash with the host's. Every
// `ip link add` says "name": `ip link add br ...` would read "br" as "broadcast".
const (
	lanBridge = "lan0"
	lanHost   = "host"
)

// prepare refuses what is in use, wires the LAN and starts every node.
func (c *Cluster) prepare(ctx context.Context, o Options) error {
	// Refuse names and addresses that are in use: they belong to someone else, and Close
	// would remove them.
	if _, err := os.Stat("/run/netns/" + c.Name); err == nil {
		return fmt.Errorf("nodes: network namespace %s exists already (another run's, or a leftover: `ip netns del %s` if it is yours)", c.Name, c.Name)
	}
	if _, err := net.InterfaceByName(c.HostVeth); err == nil {
		return fmt.Errorf("nodes: interface %s exists already (another run's, or a leftover: `ip link del %s` if it is yours)", c.HostVeth, c.HostVeth)
	}
	if owner, addr := subnetOwner(c.HostAddr); owner != "" {
		return fmt.Errorf("nodes: %s, in the LAN's %s/24, is already on interface %s; choose another Options.HostAddr", addr, c.HostAddr, owner)
	}
	for _, n := range c.Nodes {
		if _, err := os.Stat("/run/netns/" + n.Name); err == nil {
			return fmt.Errorf("nodes: network namespace %s exists already (another run's, or a leftover: `ip netns del %s` if it is yours)", n.Name, n.Name)
		}
		// Close kills what is left in the cgroup parent and removes it, so it must be new:
		// never the machine daemon's (/docker) or anyone else's.
		if dirs, _ := filepath.Glob(filepath.Join("/sys/fs/cgroup", "*", strings.TrimPrefix(n.cgroupParent, "/"))); len(dirs) > 0 {
			return fmt.Errorf("nodes: cgroup %s exists already (another run's, or a leftover: rmdir %s if it is yours and empty)", n.cgroupParent, strings.Join(dirs, " "))
		}
	}
	if o.StorageDriver == "" {
		out, err := c.run(ctx, "read the storage driver of this machine's daemon", c.docker, "info", "--format", "{{.Driver}}")
		if err != nil {
			return err
		}
		o.StorageDriver = out
	}

	c.logf("LAN: namespace %s with bridge %s; the host at %s/24 on %s", c.Name, lanBridge, c.HostAddr, c.HostVeth)
	if _, err := c.run(ctx, "create the LAN's network namespace", "ip", "netns", "add", c.Name); err != nil {
		return err
	}
	c.done.lan = true
	if _, err := c.run(ctx, "wire the host to the LAN", "ip", "link", "add", "name", c.HostVeth, "type", "veth", "peer", "name", lanHost, "netns", c.Name); err != nil {
		return err
	}
	c.done.hostVeth = true
	for _, s := range [][]string{
		{"ip", "addr", "add", c.HostAddr + "/24", "dev", c.HostVeth},
		{"ip", "link", "set", c.HostVeth, "up"},
		{"ip", "-n", c.Name, "link", "add", "name", lanBridge, "type", "bridge"},
		{"ip", "-n", c.Name, "link", "set", lanHost, "master", lanBridge},
		{"ip", "-n", c.Name, "link", "set", lanHost, "up"},
		{"ip", "-n", c.Name, "link", "set", lanBridge, "up"},
		{"ip", "-n", c.Name, "link", "set", "lo", "up"},
	} {
		if _, err := c.run(ctx, "wire the host to the LAN", s[0], s[1:]...); err != nil {
			return err
		}
	}
	for _, n := range c.Nodes {
		if err := n.wire(ctx); err != nil {
			return err
		}
		if err := n.start(ctx, o); err != nil {
			return err
		}
	}
	return nil
}

// wire creates the node's network namespace and plugs it into the LAN: a veth pair from the
// bridge (n<k>) to the node's eth0, which holds its address.
func (n *Node) wire(ctx context.Context) error {
	c := n.c
	c.logf("node %s: namespace %s, %s on the LAN's %s", n.Hostname, n.Name, n.Addr, n.lanVeth)
	if _, err := c.run(ctx, "create the network namespace of "+n.Hostname, "ip", "netns", "add", n.Name); err != nil {
		return err
	}
	n.done.netns = true
	for _, s := range [][]string{
		{"ip", "-n", c.Name, "link", "add", "name", n.lanVeth, "type", "veth", "peer", "name", "eth0", "netns", n.Name},
		{"ip", "-n", c.Name, "link", "set", n.lanVeth, "master", lanBridge},
		{"ip", "-n", c.Name, "link", "set", n.lanVeth, "up"},
		{"ip", "-n", n.Name, "addr", "add", n.Addr + "/24", "dev", "eth0"},
		{"ip", "-n", n.Name, "link", "set", "eth0", "up"},
		{"ip", "-n", n.Name, "link", "set", "lo", "up"},
	} {
		if _, err := c.run(ctx, "plug "+n.Hostname+" into the LAN", s[0], s[1:]...); err != nil {
			return err
		}
	}
	return nil
}

// subnetOwner names an interface of the host that holds an IPv4 address in a's /24, and that
// address, or "": the LAN's route would shadow it, or it would shadow the LAN's.
func subnetOwner(a string) (iface, addr string) {
	lan := net.IPNet{IP: net.ParseIP(a).To4().Mask(net.CIDRMask(24, 32)), Mask: net.CIDRMask(24, 32)}
	ifs, _ := net.Interfaces()
	for _, i := range ifs {
		addrs, _ := i.Addrs()
		for _, x := range addrs {
			if n, ok := x.(*net.IPNet); ok && n.IP.To4() != nil && lan.Contains(n.IP) {
				return i.Name, n.IP.String()
			}
		}
	}
	return "", ""
}
