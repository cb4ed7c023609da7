package nodes

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/protobench/protobench/internal/swarm/swarmtest"
)

// TestServerOnNodeTwoClientsOnNodesOneAndThree builds two nodes, starts a TCP server task on
// node 2 and a client job on this machine's node and on node 3, on one overlay network, and
// checks that each client got the server's answer by the service's DNS name: from the host
// across the LAN, and from node 3 to node 2, node to node through the LAN's bridge. Each node's
// image store starts empty. Then it checks that Close left nothing behind.
func TestServerOnNodeTwoClientsOnNodesOneAndThree(t *testing.T) {
	docker := swarmtest.Docker()
	const image = "protobench/base:latest" // perl and bash: a server and a client without a build
	if out, err := exec.Command(docker, "image", "inspect", "--format", "{{.ID}}", image).CombinedOutput(); err != nil {
		t.Skipf("needs %s (./run.sh images build): %s", image, strings.TrimSpace(string(out)))
	}
	// Names and addresses of its own, apart from the e2e test's, since packages test at once.
	c, sw := Use(t, Options{Docker: docker, Name: "pbnodes-u", Nodes: 2, HostAddr: "10.77.1.1"})
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	two, three := c.Nodes[0], c.Nodes[1]
	project := fmt.Sprintf("pbtest-nodesu%d", os.Getpid())
	d := func(args ...string) string {
		t.Helper()
		out, err := exec.CommandContext(ctx, docker, args...).CombinedOutput()
		if err != nil {
			t.Fatalf("docker %s: %v: %s", strings.Join(args, " "), err, out)
		}
		return strings.TrimSpace(string(out))
	}
	t.Cleanup(func() { swarmtest.RemoveProject(t, docker, project) })

	for _, n := range c.Nodes {
		if got, err := n.Docker(ctx, "images", "--quiet"); err != nil || got != "" {
			t.Fatalf("%s's image store is not empty at the start: %q %v", n.Hostname, got, err)
		}
	}
	start := time.Now()
	if err := c.LoadImages(ctx, image); err != nil {
		t.Fatal(err)
	}
	t.Logf("docker save | docker load of %s to nodes 2 and 3: %s", image, time.Since(start).Round(100*time.Millisecond))
	label := "protobench.project=" + project
	net := project + "-net"
	d("network", "create", "--driver", "overlay", "--attachable", "--label", label, net)
	// The server answers every connection with the hostname of the node it runs on, which the
	// swarm hands to the task through a template.
	d("service", "create", "--detach", "--no-resolve-image", "--name", project+"-server", "--label", label,
		"--container-label", label, "--network", net, "--endpoint-mode", "dnsrr",
		"--constraint", "node.id=="+two.NodeID, "--env", "NODE={{.Node.Hostname}}", image,
		"perl", "-MIO::Socket::INET", "-e",
		`$s = IO::Socket::INET->new(LocalPort => 8080, Listen => 5, ReuseAddr => 1) or die "listen: $!";
		 while ($c = $s->accept) { print $c "served by $ENV{NODE}\n"; close $c }`)
	waitTask(t, ctx, docker, project+"-server", "Running")
	// The clients retry while the server's name is not yet in the overlay's DNS. Run-once tasks
	// are replicated services never restarted, as the runner's jobs are: a replicated-job's
	// container would stay after its service is removed (moby/moby#42789).
	for _, client := range []struct{ name, node string }{{"client1", sw.NodeID}, {"client3", three.NodeID}} {
		d("service", "create", "--detach", "--no-resolve-image", "--name", project+"-"+client.name, "--label", label,
			"--container-label", label, "--network", net, "--replicas", "1", "--restart-condition", "none",
			"--constraint", "node.id=="+client.node, "--env", "NODE={{.Node.Hostname}}", image,
			"bash", "-c", `for i in $(seq 50); do
				if exec 3<>/dev/tcp/`+project+`-server/8080; then echo "client on $NODE: $(cat <&3)"; exit 0; fi
				sleep 0.2; done; exit 1`)
	}
	manager := d("node", "inspect", "--format", "{{.Description.Hostname}}", sw.NodeID)
	for _, client := range []struct{ name, host string }{{"client1", manager}, {"client3", three.Hostname}} {
		waitTask(t, ctx, docker, project+"-"+client.name, "Complete")
		got := d("service", "logs", "--raw", project+"-"+client.name)
		want := fmt.Sprintf("client on %s: served by %s", client.host, two.Hostname)
		if !strings.Contains(got, want) {
			t.Fatalf("%s job said %q, want %q", client.name, got, want)
		}
		t.Logf("%s (over the overlay, across the LAN %s)", want, c.Name)
	}

	// A task on node 2 that mounts the docker socket, as cAdvisor does, talks to node 2's daemon.
	d("service", "create", "--detach", "--no-resolve-image", "--name", project+"-sock", "--label", label,
		"--container-label", label, "--replicas", "1", "--restart-condition", "none", "--constraint", "node.id=="+two.NodeID,
		"--mount", "type=bind,source=/var/run/docker.sock,target=/var/run/docker.sock,readonly", image,
		"perl", "-MIO::Socket::UNIX", "-e",
		`$s = IO::Socket::UNIX->new(Peer => "/var/run/docker.sock") or die "connect: $!";
		 print $s "GET /info HTTP/1.0\r\n\r\n"; while (<$s>) { print "daemon name: $1\n" if /"Name":"([^"]*)","Labels"/ }`)
	waitTask(t, ctx, docker, project+"-sock", "Complete")
	if got, want := d("service", "logs", "--raw", project+"-sock"), "daemon name: "+two.Hostname; !strings.Contains(got, want) {
		t.Errorf("a task on node 2 mounting /var/run/docker.sock said %q, want %q", got, want)
	}

	swarmtest.RemoveProject(t, docker, project)
	if err := c.Close(ctx); err != nil {
		t.Fatalf("Close: %v", err)
	}
	checks := []struct{ what, cmd string }{
		{"LAN namespace", "ip netns list | grep -w " + c.Name},
		{"veth", "ip -o link show " + c.HostVeth},
	}
	for _, n := range c.Nodes {
		if pids := processesMentioning(n.Dir); len(pids) > 0 {
			t.Errorf("Close left processes naming %s behind: %v", n.Dir, pids)
		}
		checks = append(checks, []struct{ what, cmd string }{
			{"namespace", "ip netns list | grep -w " + n.Name},
			{"node", docker + " node ls --quiet --filter id=" + n.NodeID + " | grep ."},
			{"cgroup", "ls -d /sys/fs/cgroup/*/" + n.Name},
			{"directory", "ls -d " + n.Dir},
		}...)
	}
	for _, check := range checks {
		if out, err := exec.Command("sh", "-c", check.cmd).CombinedOutput(); err == nil {
			t.Errorf("Close left a %s behind: %s", check.what, out)
		}
	}
}

func waitTask(t *testing.T, ctx context.Context, docker, service, want string) {
	t.Helper()
	var last string
	for ctx.Err() == nil {
		out, _ := exec.CommandContext(ctx, docker, "service", "ps", "--no-trunc", "--format",
			"{{.Node}} {{.CurrentState}} {{.Error}}", service).CombinedOutput()
		last = strings.TrimSpace(string(out))
		if strings.Contains(last, want) {
			return
		}
		if strings.Contains(last, "Failed") || strings.Contains(last, "Rejected") {
			break
		}
		time.Sleep(500 * time.Millisecond)
	}
	t.Fatalf("service %s never reached %s: %s", service, want, last)
}

// TestPrepareRefusesWhatIsNotItsOwn checks that Prepare stops, before it creates anything,
// where Close would later remove something that is not its own.
func TestPrepareRefusesWhatIsNotItsOwn(t *testing.T) {
	for _, tc := range []struct {
		name string
		o    Options
		want string
	}{
		{"name too long for a veth", Options{Name: "fourteen-chars"}, "longer than 13"},
		{"name that is a path", Options{Name: "../pbnodes"}, "lower-case letters"},
		{"host address already in use", Options{Name: "pbnodes-t", HostAddr: "127.0.0.1"}, "already on interface lo"},
		{"an address of the host in the LAN's /24", Options{Name: "pbnodes-t", HostAddr: "127.0.0.9"}, "127.0.0.1, in the LAN's 127.0.0.9/24, is already on interface lo"},
		{"not an address", Options{Name: "pbnodes-t", HostAddr: "10.77.0"}, "not an IPv4 address"},
		{"more nodes than the /24 holds", Options{Name: "pbnodes-t", HostAddr: "10.77.0.250", Nodes: 5}, "do not fit"},
		{"no node left to join", Options{Name: "pbnodes-t", HostAddr: "10.77.0.1", Nodes: 2, Outsiders: 2}, "at least one node must join"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, err := Prepare(context.Background(), tc.o)
			if err == nil {
				c.Close(context.Background())
				t.Fatalf("Prepare succeeded, want an error with %q", tc.want)
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %q, want %q", err, tc.want)
			}
			for _, ns := range []string{"pbnodes-t", "pbnodes-t-n2"} {
				if _, err := os.Stat("/run/netns/" + ns); err == nil {
					t.Errorf("Prepare left the namespace %s", ns)
				}
			}
		})
	}
}
