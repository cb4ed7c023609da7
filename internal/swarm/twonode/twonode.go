// Package twonode gives a test a second swarm node on one machine: a second dockerd in a
// network namespace of its own, wired to the host by a veth pair, joined as a worker to the
// swarm this machine's daemon manages. Traffic between its tasks and the manager's crosses the
// veth as it would cross a LAN (VXLAN on 4789, gossip on 7946, the control plane on 2377), so a
// server on one node and a client on the other is the two-host layout, not a loopback.
//
// The second daemon shares nothing with the machine's own: its data root, exec root, socket,
// pid file, containerd (started by dockerd under its exec root), cgroup parent, bridge subnets,
// trust key and daemon.json are its own, and it runs in a mount and UTS namespace of its own
// too. The mount namespace is needed because `ip netns exec` would remount /sys for the
// namespace and so hide the cgroup v1 hierarchy that dockerd needs; here /sys is remounted for
// the namespace and the cgroup tree bound back over it. The UTS namespace gives the node its own
// hostname, so placement constraints and records can tell the two nodes apart.
//
// Every step that the machine may refuse returns a *StepError naming the command that failed
// and its output, so a test can skip with the exact reason.
package twonode

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os/exec"
	"strings"
	"time"
)

// Options say how to build the second node. The zero value works on a machine where the
// names and subnets below are free.
type Options struct {
	// Docker is the docker CLI; "docker" when empty. It talks to the manager (this machine's
	// daemon, through the environment) and, with DOCKER_HOST set, to the second node.
	Docker string
	// Name names the network namespace, the veth pair (Name+"-h" on the host, Name+"-n" inside)
	// and the cgroup parent; "pbtwo" when empty. At most 13 characters (veth names are at most
	// 15).
	Name string
	// Hostname is the second node's hostname, which the swarm shows as node.hostname;
	// Name+"-node2" when empty.
	Hostname string
	// HostAddr and NodeAddr are the two ends of the veth, in one /30; 10.77.0.1 and 10.77.0.2
	// when empty. The manager must advertise HostAddr.
	HostAddr, NodeAddr string
	// BridgeIP is the second daemon's docker0 (--bip) and AddressPool its pool for local
	// networks such as docker_gwbridge; 10.78.0.1/24 and 10.79.0.0/16 when empty, apart from
	// Docker's defaults (172.17.0.0/12, 192.168.0.0/16) that the machine's daemon uses.
	BridgeIP, AddressPool string
	// InsecureRegistries are the registries the second daemon pulls from without TLS, as
	// daemon.json's insecure-registries; HostAddr+"/32" when nil, so that it pulls the suite's
	// images from a registry the manager publishes in host mode (where the kernel has no IPVS
	// for the routing mesh, swarm/registry does that), as a second host would be configured.
	InsecureRegistries []string
	// StorageDriver is the second daemon's storage driver; the machine daemon's when empty
	// (the kernel and filesystem that allow one allow the other).
	StorageDriver string
	// Dir is the parent of the node's own new directory (data root, exec root, socket, log),
	// which Close removes; os.TempDir() when empty. Keep it short: the containerd socket path
	// under it must fit a unix socket name (108 bytes).
	Dir string
	// StartTimeout bounds the wait for the second daemon's API; 60 s when zero.
	StartTimeout time.Duration
	// Log receives one line per step; nil discards them.
	Log io.Writer
}

// StepError is a step the machine refused: the command, its output and the error.
type StepError struct {
	Step   string // what was being done, e.g. "start the second dockerd"
	Cmd    string // the command line that failed
	Output string // its combined output, trimmed
	Err    error
}

func (e *StepError) Error() string {
	s := fmt.Sprintf("%s: `%s`: %v", e.Step, e.Cmd, e.Err)
	if e.Output != "" {
		s += ": " + e.Output
	}
	return s
}

func (e *StepError) Unwrap() error { return e.Err }

// Cluster is the second node and what it took to build it.
type Cluster struct {
	Name, Hostname     string
	HostVeth, NodeVeth string
	HostAddr, NodeAddr string
	// Dir holds the node's data root (Dir/data), exec root (Dir/exec), socket, daemon.json
	// and the daemon's log (Dir/dockerd.log).
	Dir string
	// DockerHost is the DOCKER_HOST value that reaches the second daemon.
	DockerHost string
	// PID is the second dockerd's process ID (0 once stopped).
	PID int
	// NodeID is the second node's swarm node ID and ManagerID the manager's, set by Join.
	NodeID, ManagerID string

	docker string
	log    io.Writer
	cmd    *exec.Cmd
	exited chan struct{}
	done   struct {
		netns, veth, dir, daemon, joined, cgroup bool
	}
	cgroupParent string
	closed       bool
}

// Start is Prepare followed by Join, for a caller whose manager already advertises
// Options.HostAddr. On error nothing it made is left behind.
func Start(ctx context.Context, o Options) (*Cluster, error) {
	c, err := Prepare(ctx, o)
	if err != nil {
		return nil, err
	}
	if err := c.Join(ctx); err != nil {
		return nil, errors.Join(err, c.Close(context.WithoutCancel(ctx)))
	}
	return c, nil
}

// Prepare creates the namespace and the veth pair and starts the second dockerd in them. It
// does not touch the swarm, so a test can create the manager's swarm afterwards, advertising
// the host end of the veth that now exists. On error nothing it made is left behind.
func Prepare(ctx context.Context, o Options) (*Cluster, error) {
	if o.Docker == "" {
		o.Docker = "docker"
	}
	if o.Name == "" {
		o.Name = "pbtwo"
	}
	if len(o.Name) > 13 {
		return nil, fmt.Errorf("twonode: name %q is longer than 13 characters (veth names are at most 15)", o.Name)
	}
	// It becomes a path (/run/netns, the cgroup parent) and an interface name.
	if strings.Trim(o.Name, "abcdefghijklmnopqrstuvwxyz0123456789-") != "" || o.Name[0] == '-' {
		return nil, fmt.Errorf("twonode: name %q: use lower-case letters, digits and '-'", o.Name)
	}
	if o.Hostname == "" {
		o.Hostname = o.Name + "-node2"
	}
	if o.HostAddr == "" {
		o.HostAddr = "10.77.0.1"
	}
	if o.NodeAddr == "" {
		o.NodeAddr = "10.77.0.2"
	}
	if o.BridgeIP == "" {
		o.BridgeIP = "10.78.0.1/24"
	}
	if o.AddressPool == "" {
		o.AddressPool = "10.79.0.0/16"
	}
	if o.InsecureRegistries == nil {
		o.InsecureRegistries = []string{o.HostAddr + "/32"}
	}
	if o.StartTimeout == 0 {
		o.StartTimeout = 60 * time.Second
	}
	if o.Log == nil {
		o.Log = io.Discard
	}
	c := &Cluster{
		Name: o.Name, Hostname: o.Hostname,
		HostVeth: o.Name + "-h", NodeVeth: o.Name + "-n",
		HostAddr: o.HostAddr, NodeAddr: o.NodeAddr,
		docker: o.Docker, log: o.Log,
		cgroupParent: "/" + o.Name,
	}
	if err := c.prepare(ctx, o); err != nil {
		return nil, errors.Join(err, c.Close(context.WithoutCancel(ctx)))
	}
	return c, nil
}
