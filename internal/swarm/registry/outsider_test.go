package registry

import (
	"archive/tar"
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/protobench/protobench/internal/swarm/nodes"
	"github.com/protobench/protobench/internal/swarm/swarmtest"
)

// TestOutsiderCannotPush builds a swarm of this machine's daemon and one namespaced node, plus a
// dockerd on the same LAN that is no node of the swarm (a neighbour), and distributes our base
// image. The node pulls it and runs it; the neighbour, which reaches the registry, cannot push
// an image into it, neither under a new tag nor over the tag the node pulls.
func TestOutsiderCannotPush(t *testing.T) {
	docker := swarmtest.Docker()
	requireImage(t, docker, "registry", LocalImage, UpstreamImage)
	const base = "protobench/base:latest"
	requireImage(t, docker, "base", base)
	c, _ := nodes.Use(t, nodes.Options{Docker: docker, Name: "pbnodes-r", Nodes: 2, Outsiders: 1, HostAddr: "10.77.3.1"})
	node, outsider := c.Nodes[0], c.Nodes[1]
	ctx, cancel := context.WithTimeout(context.Background(), 6*time.Minute)
	defer cancel()
	project := fmt.Sprintf("pbtest-regout%d", os.Getpid())
	t.Cleanup(func() { swarmtest.RemoveProject(t, docker, project) })
	port := freePort(t)
	var log syncBuffer
	refs, cleanup, err := Distribute(ctx, Options{Docker: docker, Project: project, Port: port, Log: &log,
		Images: map[string]string{"base": base}})
	t.Cleanup(func() {
		if err := cleanup(context.Background()); err != nil {
			t.Errorf("cleanup: %v", err)
		}
	})
	t.Logf("Distribute log:\n%s", log.String())
	if err != nil {
		t.Fatalf("Distribute: %v", err)
	}
	ref := refs["base"]
	if !strings.Contains(ref, "@sha256:") && !strings.Contains(log.String(), "cannot pull") {
		t.Errorf("%s is pinned to no digest, and the log does not say why", ref)
	}

	// The node pulls and runs it.
	job := project + "-job"
	mustDocker(t, docker, "service", "create", "--detach", "--quiet", "--name", job,
		"--replicas", "1", "--restart-condition", "none", "--constraint", "node.id=="+node.NodeID,
		"--label", "protobench.project="+project, "--container-label", "protobench.project="+project,
		"--no-resolve-image", ref, "true")
	if state := waitJob(t, docker, job, 3*time.Minute); !strings.HasPrefix(state, "Complete") {
		t.Fatalf("a job from %s on %s: task state %q", ref, node.Hostname, state)
	}

	// The neighbour reaches the registry, so a refused push is the registry's refusal.
	registry := strings.SplitN(ref, "/", 2)[0]
	probe := exec.CommandContext(ctx, "ip", "netns", "exec", outsider.Name, "curl", "--silent", "--show-error",
		"--noproxy", "*", "--output", "/dev/null", "--write-out", "%{http_code}", "http://"+registry+"/v2/")
	if out, err := probe.CombinedOutput(); err != nil || string(out) != "200" {
		t.Fatalf("the neighbour %s does not reach the registry at %s: %v: %s", outsider.Hostname, registry, err, out)
	}
	imp := exec.CommandContext(ctx, docker, "import", "-", "pbtest-evil:1")
	imp.Env, imp.Stdin = outsider.Env(), bytes.NewReader(evilTar(t))
	if out, err := imp.CombinedOutput(); err != nil {
		t.Fatalf("docker import on the neighbour: %v: %s", err, out)
	}
	repo := repoOf(strings.SplitN(ref, "@", 2)[0])
	for _, target := range []string{repo + ":evil", repo + ":" + tagOf(Ref("x", project, "base", base, "sha256:0"))} {
		if _, err := outsider.Docker(ctx, "tag", "pbtest-evil:1", target); err != nil {
			t.Fatal(err)
		}
		out, err := outsider.Docker(ctx, "push", target)
		if err == nil {
			t.Fatalf("the neighbour %s pushed %s into the swarm's registry: %s", outsider.Hostname, target, out)
		}
		t.Logf("the neighbour's docker push %s: %v", target, err)
	}
}

// evilTar is a root filesystem of one file, for docker import.
func evilTar(t *testing.T) []byte {
	t.Helper()
	var b bytes.Buffer
	tw := tar.NewWriter(&b)
	body := "not what the manager pushed\n"
	if err := tw.WriteHeader(&tar.Header{Name: "evil", Mode: 0o644, Size: int64(len(body)), Typeflag: tar.TypeReg}); err != nil {
		t.Fatal(err)
	}
	if _, err := tw.Write([]byte(body)); err != nil {
		t.Fatal(err)
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}
