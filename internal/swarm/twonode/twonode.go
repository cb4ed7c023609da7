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
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
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

// Join joins the second node to the swarm this machine's daemon manages, as a worker. The
// manager must advertise the host end of the veth, or the node could not reach it.
func (c *Cluster) Join(ctx context.Context) error {
	out, err := c.run(ctx, "read the manager's swarm state", nil, c.docker, "info", "--format",
		"{{.Swarm.LocalNodeState}} {{.Swarm.ControlAvailable}} {{.Swarm.NodeAddr}} {{.Swarm.NodeID}}")
	if err != nil {
		return err
	}
	f := strings.Fields(out)
	if len(f) < 4 || f[0] != "active" || f[1] != "true" {
		return fmt.Errorf("twonode: this machine's daemon is not a swarm manager (docker info: %q)", out)
	}
	if f[2] != c.HostAddr {
		return fmt.Errorf("twonode: this machine's swarm advertises %s, but the second node reaches the host only at %s; the swarm must be initialised with --advertise-addr %s", f[2], c.HostAddr, c.HostAddr)
	}
	c.ManagerID = f[3]
	token, err := c.run(ctx, "read the worker join token", nil, c.docker, "swarm", "join-token", "--quiet", "worker")
	if err != nil {
		return err
	}
	c.logf("joining %s to the swarm at %s:2377", c.Hostname, c.HostAddr)
	if _, err := c.node(ctx, "swarm", "join", "--token", token, "--advertise-addr", c.NodeAddr, c.HostAddr+":2377"); err != nil {
		var se *StepError
		if errors.As(err, &se) {
			se.Step = "join the second node to the swarm"
			se.Cmd = strings.Replace(se.Cmd, token, "<token>", 1)
		}
		return err
	}
	c.done.joined = true
	if c.NodeID, err = c.node(ctx, "info", "--format", "{{.Swarm.NodeID}}"); err != nil {
		return err
	}
	// The manager lists the node as ready once its first heartbeat arrived over the veth.
	for i := 0; ; i++ {
		state, err := c.run(ctx, "read the second node's state", nil, c.docker, "node", "inspect", "--format", "{{.Status.State}}", c.NodeID)
		if err == nil && state == "ready" {
			c.logf("node %s (%s) ready", c.NodeID, c.Hostname)
			return nil
		}
		if i == 120 {
			return &StepError{Step: "wait for the second node to be ready", Cmd: c.docker + " node inspect " + c.NodeID,
				Err: errors.New("not ready after 60 s"), Output: state}
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(500 * time.Millisecond):
		}
	}
}

// Label adds the label key=value to a node (by ID or hostname), through the manager.
func (c *Cluster) Label(ctx context.Context, node, key, value string) error {
	_, err := c.run(ctx, "label node "+node, nil, c.docker, "node", "update", "--label-add", key+"="+value, node)
	return err
}

// Env is the environment in which the docker CLI talks to the second node.
func (c *Cluster) Env() []string { return append(os.Environ(), "DOCKER_HOST="+c.DockerHost) }

// Docker runs the docker CLI against the second node and returns its trimmed output.
func (c *Cluster) Docker(ctx context.Context, args ...string) (string, error) {
	return c.node(ctx, args...)
}

// LoadImages copies images from this machine's daemon to the second node, `docker save` piped
// into `docker load`, for tests that do not want a registry in the way.
func (c *Cluster) LoadImages(ctx context.Context, refs ...string) error {
	save := exec.CommandContext(ctx, c.docker, append([]string{"save"}, refs...)...)
	load := exec.CommandContext(ctx, c.docker, "load", "--quiet")
	load.Env = c.Env()
	var saveErr, loadOut bytes.Buffer
	save.Stderr = &saveErr
	load.Stdout, load.Stderr = &loadOut, &loadOut
	pipe, err := save.StdoutPipe()
	if err != nil {
		return err
	}
	load.Stdin = pipe
	cmdline := c.docker + " save " + strings.Join(refs, " ") + " | DOCKER_HOST=" + c.DockerHost + " " + c.docker + " load"
	if err := save.Start(); err != nil {
		return &StepError{Step: "copy images to the second node", Cmd: cmdline, Err: err}
	}
	lerr := load.Run()
	serr := save.Wait()
	if serr != nil {
		return &StepError{Step: "copy images to the second node", Cmd: cmdline, Err: serr, Output: strings.TrimSpace(saveErr.String())}
	}
	if lerr != nil {
		return &StepError{Step: "copy images to the second node", Cmd: cmdline, Err: lerr, Output: strings.TrimSpace(loadOut.String())}
	}
	c.logf("copied %s to %s", strings.Join(refs, ", "), c.Hostname)
	return nil
}

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

// node runs the docker CLI against the second daemon.
func (c *Cluster) node(ctx context.Context, args ...string) (string, error) {
	return c.run(ctx, "docker on the second node", c.Env(), c.docker, args...)
}

func (c *Cluster) run(ctx context.Context, step string, env []string, name string, args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Env = env
	out, err := cmd.CombinedOutput()
	s := strings.TrimSpace(string(out))
	if err != nil {
		line := name + " " + strings.Join(args, " ")
		if env != nil {
			line = "DOCKER_HOST=" + c.DockerHost + " " + line
		}
		return s, &StepError{Step: step, Cmd: line, Output: s, Err: err}
	}
	return s, nil
}

func (c *Cluster) logf(format string, a ...any) {
	if c.log != nil {
		fmt.Fprintf(c.log, "twonode: "+format+"\n", a...)
	}
}

// addrOwner names the interface that holds the IPv4 address a, or "".
func addrOwner(a string) string {
	ifs, _ := net.Interfaces()
	for _, i := range ifs {
		addrs, _ := i.Addrs()
		for _, x := range addrs {
			if n, ok := x.(*net.IPNet); ok && n.IP.String() == a {
				return i.Name
			}
		}
	}
	return ""
}

// mountsUnder lists the host's mount points at or below dir.
func mountsUnder(dir string) []string {
	b, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		return nil
	}
	var out []string
	for _, line := range strings.Split(string(b), "\n") {
		f := strings.Fields(line)
		if len(f) > 4 && (f[4] == dir || strings.HasPrefix(f[4], dir+"/")) {
			out = append(out, f[4])
		}
	}
	return out
}

// processesMentioning lists the PIDs whose command line contains s.
func processesMentioning(s string) []int {
	ents, _ := os.ReadDir("/proc")
	var pids []int
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == os.Getpid() {
			continue
		}
		b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err == nil && bytes.Contains(b, []byte(s)) {
			pids = append(pids, pid)
		}
	}
	return pids
}

// tail returns the last n lines of a file.
func tail(path string, n int) string {
	f, err := os.Open(path)
	if err != nil {
		return ""
	}
	defer f.Close()
	var lines []string
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64*1024), 1024*1024)
	for sc.Scan() {
		lines = append(lines, sc.Text())
		if len(lines) > n {
			lines = lines[1:]
		}
	}
	return strings.Join(lines, "\n")
}
