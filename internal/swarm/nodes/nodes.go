// Package nodes gives a test extra swarm nodes on one machine: each a dockerd in a network
// namespace of its own, joined as a worker to the swarm this machine's daemon manages. The nodes
// and the host sit on one LAN: a bridge in a namespace of its own (the switch), with a veth pair
// to the host and one to each node. Traffic between tasks on different nodes crosses it as it
// would cross a LAN (VXLAN on 4789, gossip on 7946, the control plane on 2377), so a server on
// one node and clients on the others is the several-host layout, not a loopback. The switch
// has a namespace of its own because a bridge on the host would hand the nodes' frames to the
// host's iptables (br_netfilter), whose FORWARD chain Docker sets to drop.
//
// A node's daemon shares nothing with the machine's own: its data root (so its image store
// starts empty), exec root, socket, pid file, containerd (started by dockerd under its exec
// root), cgroup parent, bridge subnets, trust key and daemon.json are its own, and it runs in a
// mount and UTS namespace of its own too. The mount namespace is needed because `ip netns exec`
// would remount /sys for the namespace and so hide the cgroup v1 hierarchy that dockerd needs;
// here /sys is remounted for the namespace and the cgroup tree bound back over it. The UTS
// namespace gives the node its own hostname, so placement constraints and records can tell the
// nodes apart.
//
// Every step that the machine may refuse returns a *StepError naming the command that failed
// and its output, so a test can skip with the exact reason.
package nodes

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os/exec"
	"strconv"
	"strings"
	"time"
)

// Options say how to build the nodes. The zero value builds one node on a machine where the
// names and subnets below are free.
type Options struct {
	// Docker is the docker CLI; "docker" when empty. It talks to the manager (this machine's
	// daemon, through the environment) and, with DOCKER_HOST set, to a node.
	Docker string
	// Nodes is how many nodes to build; 1 when zero.
	Nodes int
	// Outsiders is how many of the Nodes, the last ones, Join leaves out of the swarm: a
	// dockerd on the LAN that is no node of it, as a neighbour on a real LAN would be.
	Outsiders int
	// Name names the LAN's namespace and the host's end of its veth pair (Name+"-h"); node k
	// (counting the manager as node 1, so from 2) gets the namespace and cgroup parent
	// Name+"-n"+k. "pbnodes" when empty. At most 13 characters (interface names are at most
	// 15).
	Name string
	// HostAddr is the host's address on the LAN, whose /24 the LAN is; node k gets the address
	// k-1 above it (HostAddr 10.77.0.1: node 2 10.77.0.2, node 3 10.77.0.3). 10.77.0.1 when
	// empty. The manager must advertise HostAddr.
	HostAddr string
	// BridgeIP is each node's docker0 (--bip) and AddressPool its pool for local networks such
	// as docker_gwbridge; 10.78.0.1/24 and 10.79.0.0/16 when empty, apart from Docker's
	// defaults (172.17.0.0/12, 192.168.0.0/16) that the machine's daemon uses. The nodes may
	// share them: each has a network namespace of its own.
	BridgeIP, AddressPool string
	// InsecureRegistries are the registries the nodes pull from without TLS, as daemon.json's
	// insecure-registries; HostAddr+"/32" when nil, so that they pull the suite's images from a
	// registry the manager publishes in host mode (where the kernel has no IPVS for the routing
	// mesh, swarm/registry does that), as a second host would be configured.
	InsecureRegistries []string
	// StorageDriver is the nodes' storage driver; the machine daemon's when empty (the kernel
	// and filesystem that allow one allow the other).
	StorageDriver string
	// Dir is the parent of each node's own new directory (data root, exec root, socket, log),
	// which Close removes; os.TempDir() when empty. Keep it short: the containerd socket path
	// under it must fit a unix socket name (108 bytes).
	Dir string
	// StartTimeout bounds the wait for each node's daemon API; 60 s when zero.
	StartTimeout time.Duration
	// Log receives one line per step; nil discards them.
	Log io.Writer
}

// StepError is a step the machine refused: the command, its output and the error.
type StepError struct {
	Step   string // what was being done, e.g. "start the dockerd of node 2"
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

// Cluster is the LAN, its nodes and what it took to build them.
type Cluster struct {
	// Name is the LAN's namespace, HostVeth the host's end of its veth pair, HostAddr the
	// host's address on it.
	Name, HostVeth, HostAddr string
	// Nodes are the nodes, node 2 first.
	Nodes []*Node
	// ManagerID is the manager's swarm node ID, set by Join.
	ManagerID string

	docker string
	log    io.Writer
	done   struct{ lan, hostVeth bool }
	closed bool
}

// Node is one namespaced dockerd.
type Node struct {
	// Name is its network namespace and cgroup parent; Hostname what the swarm shows as
	// node.hostname; Addr its address on the LAN.
	Name, Hostname, Addr string
	// Dir holds the node's data root (Dir/data), exec root (Dir/exec), socket, daemon.json
	// and the daemon's log (Dir/dockerd.log).
	Dir string
	// DockerHost is the DOCKER_HOST value that reaches the node's daemon.
	DockerHost string
	// PID is the node's dockerd's process ID (0 once stopped).
	PID int
	// NodeID is the node's swarm node ID, set by Join.
	NodeID string
	// Outsider says Join leaves it out of the swarm (Options.Outsiders).
	Outsider bool

	c            *Cluster
	lanVeth      string // its veth's end on the LAN's bridge
	cgroupParent string
	cmd          *exec.Cmd
	exited       chan struct{}
	done         struct{ netns, dir, daemon, joined, cgroup bool }
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

// Prepare creates the LAN and the nodes' namespaces and starts a dockerd in each. It does not
// touch the swarm, so a test can create the manager's swarm afterwards, advertising the host's
// address on the LAN, which now exists. On error nothing it made is left behind.
func Prepare(ctx context.Context, o Options) (*Cluster, error) {
	if err := o.defaults(); err != nil {
		return nil, err
	}
	c := &Cluster{Name: o.Name, HostVeth: o.Name + "-h", HostAddr: o.HostAddr, docker: o.Docker, log: o.Log}
	base := net.ParseIP(o.HostAddr).To4()
	for i := range o.Nodes {
		k := i + 2
		addr := make(net.IP, 4)
		copy(addr, base)
		addr[3] += byte(i + 1)
		name := o.Name + "-n" + strconv.Itoa(k)
		c.Nodes = append(c.Nodes, &Node{
			Name: name, Hostname: o.Name + "-node" + strconv.Itoa(k), Addr: addr.String(),
			c: c, lanVeth: "n" + strconv.Itoa(k), cgroupParent: "/" + name,
			Outsider: i >= o.Nodes-o.Outsiders,
		})
	}
	if err := c.prepare(ctx, o); err != nil {
		return nil, errors.Join(err, c.Close(context.WithoutCancel(ctx)))
	}
	return c, nil
}

// defaults fills in the zero options and refuses names and addresses Close could not own.
func (o *Options) defaults() error {
	if o.Docker == "" {
		o.Docker = "docker"
	}
	if o.Nodes == 0 {
		o.Nodes = 1
	}
	if o.Name == "" {
		o.Name = "pbnodes"
	}
	if len(o.Name) > 13 {
		return fmt.Errorf("nodes: name %q is longer than 13 characters (interface names are at most 15)", o.Name)
	}
	// It becomes a path (/run/netns, the cgroup parent) and an interface name.
	if strings.Trim(o.Name, "abcdefghijklmnopqrstuvwxyz0123456789-") != "" || o.Name[0] == '-' {
		return fmt.Errorf("nodes: name %q: use lower-case letters, digits and '-'", o.Name)
	}
	if o.HostAddr == "" {
		o.HostAddr = "10.77.0.1"
	}
	ip := net.ParseIP(o.HostAddr)
	if ip == nil || ip.To4() == nil {
		return fmt.Errorf("nodes: %q is not an IPv4 address", o.HostAddr)
	}
	if o.Nodes < 1 {
		return fmt.Errorf("nodes: %d nodes", o.Nodes)
	}
	if o.Outsiders < 0 || o.Outsiders >= o.Nodes {
		return fmt.Errorf("nodes: %d outsiders among %d nodes: at least one node must join", o.Outsiders, o.Nodes)
	}
	if last := int(ip.To4()[3]); last == 0 || last+o.Nodes > 254 {
		return fmt.Errorf("nodes: %d nodes after %s do not fit its /24", o.Nodes, o.HostAddr)
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
	return nil
}
