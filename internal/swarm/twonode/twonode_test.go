package twonode

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"
)

// TestServerOnNodeTwoClientOnNodeOne builds the second node, starts a TCP server task on it and
// a client job on this machine's node, on one overlay network, and checks that the client got
// the server's answer, across the veth, by the service's DNS name. Then it checks that Close
// left nothing behind.
func TestServerOnNodeTwoClientOnNodeOne(t *testing.T) {
	docker := os.Getenv("PROTOBENCH_DOCKER")
	if docker == "" {
		docker = "docker"
	}
	const image = "protobench/base:latest" // perl and bash: a server and a client without a build
	if out, err := exec.Command(docker, "image", "inspect", "--format", "{{.ID}}", image).CombinedOutput(); err != nil {
		t.Skipf("needs %s (./run.sh images build): %s", image, strings.TrimSpace(string(out)))
	}
	// Names and addresses of its own, apart from the e2e test's, since packages test at once.
	c, sw := Use(t, Options{Docker: docker, Name: "pbtwo-u", HostAddr: "10.77.0.5", NodeAddr: "10.77.0.6"})
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	project := fmt.Sprintf("pbtest-twou%d", os.Getpid())
	d := func(args ...string) string {
		t.Helper()
		out, err := exec.CommandContext(ctx, docker, args...).CombinedOutput()
		if err != nil {
			t.Fatalf("docker %s: %v: %s", strings.Join(args, " "), err, out)
		}
		return strings.TrimSpace(string(out))
	}
	t.Cleanup(func() { removeProject(t, docker, project) })

	start := time.Now()
	if err := c.LoadImages(ctx, image); err != nil {
		t.Fatal(err)
	}
	t.Logf("docker save | docker load of %s to node 2: %s", image, time.Since(start).Round(100*time.Millisecond))
	label := "protobench.project=" + project
	net := project + "-net"
	d("network", "create", "--driver", "overlay", "--attachable", "--label", label, net)
	// The server answers every connection with the hostname of the node it runs on, which the
	// swarm hands to the task through a template.
	d("service", "create", "--detach", "--no-resolve-image", "--name", project+"-server", "--label", label,
		"--container-label", label, "--network", net, "--endpoint-mode", "dnsrr",
		"--constraint", "node.id=="+c.NodeID, "--env", "NODE={{.Node.Hostname}}", image,
		"perl", "-MIO::Socket::INET", "-e",
		`$s = IO::Socket::INET->new(LocalPort => 8080, Listen => 5, ReuseAddr => 1) or die "listen: $!";
		 while ($c = $s->accept) { print $c "served by $ENV{NODE}\n"; close $c }`)
	waitTask(t, ctx, docker, project+"-server", "Running")
	// The client retries while the server's name is not yet in the overlay's DNS.
	d("service", "create", "--detach", "--no-resolve-image", "--name", project+"-client", "--label", label,
		"--container-label", label, "--network", net, "--mode", "replicated-job",
		"--constraint", "node.id=="+sw.NodeID, "--env", "NODE={{.Node.Hostname}}", image,
		"bash", "-c", `for i in $(seq 50); do
			if exec 3<>/dev/tcp/`+project+`-server/8080; then echo "client on $NODE: $(cat <&3)"; exit 0; fi
			sleep 0.2; done; exit 1`)
	waitTask(t, ctx, docker, project+"-client", "Complete")

	got := d("service", "logs", "--raw", project+"-client")
	manager := d("node", "inspect", "--format", "{{.Description.Hostname}}", sw.NodeID)
	want := fmt.Sprintf("client on %s: served by %s", manager, c.Hostname)
	if !strings.Contains(got, want) {
		t.Fatalf("client job said %q, want %q", got, want)
	}
	t.Logf("%s (node 1 -> node 2 over the overlay, across veth %s)", want, c.HostVeth)

	// A task on node 2 that mounts the docker socket, as cAdvisor does, talks to node 2's daemon.
	d("service", "create", "--detach", "--no-resolve-image", "--name", project+"-sock", "--label", label,
		"--container-label", label, "--mode", "replicated-job", "--constraint", "node.id=="+c.NodeID,
		"--mount", "type=bind,source=/var/run/docker.sock,target=/var/run/docker.sock,readonly", image,
		"perl", "-MIO::Socket::UNIX", "-e",
		`$s = IO::Socket::UNIX->new(Peer => "/var/run/docker.sock") or die "connect: $!";
		 print $s "GET /info HTTP/1.0\r\n\r\n"; while (<$s>) { print "daemon name: $1\n" if /"Name":"([^"]*)","Labels"/ }`)
	waitTask(t, ctx, docker, project+"-sock", "Complete")
	if got, want := d("service", "logs", "--raw", project+"-sock"), "daemon name: "+c.Hostname; !strings.Contains(got, want) {
		t.Errorf("a task on node 2 mounting /var/run/docker.sock said %q, want %q", got, want)
	}

	removeProject(t, docker, project)
	if err := c.Close(ctx); err != nil {
		t.Fatalf("Close: %v", err)
	}
	if pids := processesMentioning(c.Dir); len(pids) > 0 {
		t.Errorf("Close left processes naming %s behind: %v", c.Dir, pids)
	}
	for _, check := range []struct{ what, cmd string }{
		{"namespace", "ip netns list | grep -w " + c.Name},
		{"veth", "ip -o link show " + c.HostVeth},
		{"node", docker + " node ls --quiet --filter id=" + c.NodeID + " | grep ."},
		{"cgroup", "ls -d /sys/fs/cgroup/*/" + c.Name},
		{"directory", "ls -d " + c.Dir},
	} {
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

// removeProject removes the test's services and networks, by its project label only.
func removeProject(t *testing.T, docker, project string) {
	t.Helper()
	label := "label=protobench.project=" + project
	if out, _ := exec.Command(docker, "service", "ls", "--quiet", "--filter", label).Output(); len(out) > 0 {
		_ = exec.Command(docker, append([]string{"service", "rm"}, strings.Fields(string(out))...)...).Run()
	}
	for i := 0; i < 20; i++ {
		out, _ := exec.Command(docker, "network", "ls", "--quiet", "--filter", label).Output()
		if len(out) == 0 {
			return
		}
		_ = exec.Command(docker, append([]string{"network", "rm"}, strings.Fields(string(out))...)...).Run()
		time.Sleep(500 * time.Millisecond)
	}
	t.Errorf("networks labelled protobench.project=%s still there", project)
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
		{"name that is a path", Options{Name: "../pbtwo"}, "lower-case letters"},
		{"host address already in use", Options{Name: "pbtwo-t", HostAddr: "127.0.0.1"}, "already on interface lo"},
		{"not an address", Options{Name: "pbtwo-t", HostAddr: "10.77.0"}, "not an IPv4 address"},
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
			if _, err := os.Stat("/run/netns/pbtwo-t"); err == nil {
				t.Errorf("Prepare left the namespace pbtwo-t")
			}
		})
	}
}
