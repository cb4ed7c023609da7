package registry

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/protobench/protobench/internal/swarm/swarmtest"
)

// TestDistribute pushes our base image to a real registry service on a real (single-node)
// swarm, checks that the reference is pinned to the push's digest and that the serving
// registry refuses a push, then runs a replicated job from the returned reference on a node
// that has to pull it through 127.0.0.1:<port>, and checks that cleanup leaves no service,
// container, volume or tag behind.
func TestDistribute(t *testing.T) {
	// The images are checked first, so a machine without them skips without a swarm init.
	docker := swarmtest.Docker()
	requireImage(t, docker, "registry", LocalImage, UpstreamImage)
	const base = "protobench/base:latest"
	requireImage(t, docker, "base", base)
	sw := swarmtest.Use(t)
	sw.RequireAlone(t)
	docker = sw.Docker
	baseID := mustDocker(t, docker, "image", "inspect", "--format", "{{.ID}}", base)

	project := fmt.Sprintf("pbtest-reg%d", os.Getpid())
	port := freePort(t)
	var log syncBuffer
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()

	refs, cleanup, err := Distribute(ctx, Options{
		Docker: docker, Project: project, Port: port, Log: &log,
		Images: map[string]string{"base": base},
	})
	cleaned := false
	t.Cleanup(func() {
		if !cleaned {
			_ = cleanup(context.Background())
		}
	})
	if err != nil {
		t.Fatalf("Distribute: %v\nlog:\n%s", err, log.String())
	}
	t.Logf("Distribute log:\n%s", log.String())
	want := Ref(fmt.Sprintf("127.0.0.1:%d", port), project, "base", base, baseID)
	repo := want[:strings.LastIndex(want, ":")]
	digest := ""
	for _, r := range names(t, docker, baseID) {
		if d, ok := strings.CutPrefix(r, repo+"@"); ok {
			digest = d
		}
	}
	if digest == "" || refs["base"] != repo+"@"+digest || len(refs) != 1 {
		t.Fatalf("refs = %v, want base: %s@<the push's digest %q>", refs, repo, digest)
	}
	if !strings.Contains(log.String(), "nodes pull base as "+refs["base"]) {
		t.Errorf("log has no pull line for %s", refs["base"])
	}
	if got := strings.Fields(mustDocker(t, docker, "service", "ls", "--format", "{{.Name}}", "--filter", "label=protobench.project="+project)); len(got) != 1 || got[0] != ServiceName(project) {
		t.Fatalf("services labelled protobench.project=%s: %v, want the serving registry alone (the push one gone)", project, got)
	}

	t.Run("the serving registry refuses a push", func(t *testing.T) {
		evil := fmt.Sprintf("127.0.0.1:%d/%s/base:evil", port, project)
		mustDocker(t, docker, "tag", baseID, evil)
		defer exec.Command(docker, "image", "rm", evil).Run()
		out, err := exec.Command(docker, "push", evil).CombinedOutput()
		if err == nil {
			t.Fatalf("docker push %s into the serving registry succeeded: %s", evil, out)
		}
		t.Logf("docker push %s: %v: %s", evil, err, strings.TrimSpace(string(out)))
	})

	t.Run("port taken by the registry", func(t *testing.T) {
		_, c2, err := Distribute(ctx, Options{Docker: docker, Project: project + "b", Port: port,
			Images: map[string]string{"base": base}})
		defer c2(context.Background())
		if err == nil || !strings.Contains(err.Error(), fmt.Sprintf("registry port %d is taken", port)) {
			t.Fatalf("second registry on port %d: err = %v, want it taken", port, err)
		}
	})
	t.Run("port taken by a process", func(t *testing.T) {
		l, err := net.Listen("tcp", ":0")
		if err != nil {
			t.Fatal(err)
		}
		defer l.Close()
		busy := l.Addr().(*net.TCPAddr).Port
		_, c2, err := Distribute(ctx, Options{Docker: docker, Project: project + "c", Port: busy,
			Images: map[string]string{"base": base}})
		defer c2(context.Background())
		if err == nil || !strings.Contains(err.Error(), "taken on this node") {
			t.Fatalf("port %d held by this test: err = %v, want it taken on this node", busy, err)
		}
	})

	// Drop every name the push gave the image here, so the task's node has to pull it from the
	// registry, as every other node does. Removing the tag takes the repository's digest
	// reference with it.
	for _, r := range names(t, docker, baseID) {
		if strings.HasPrefix(r, repo) {
			if out, err := exec.Command(docker, "image", "rm", r).CombinedOutput(); err != nil && !strings.Contains(string(out), "No such image") {
				t.Fatalf("docker image rm %s: %v: %s", r, err, out)
			}
		}
	}
	for _, r := range names(t, docker, baseID) {
		if strings.Contains(r, "/"+project+"/") {
			t.Fatalf("%s still names the image: the job would not pull", r)
		}
	}
	job := project + "-job"
	mustDocker(t, docker, "service", "create", "--detach", "--quiet", "--name", job,
		"--mode", "replicated-job", "--restart-condition", "none",
		"--label", "protobench.project="+project, "--container-label", "protobench.project="+project,
		refs["base"], "true")
	defer exec.Command(docker, "service", "rm", job).Run()
	state := waitJob(t, docker, job, 2*time.Minute)
	if !strings.HasPrefix(state, "Complete") {
		t.Fatalf("job from %s: task state %q", refs["base"], state)
	}
	pulled := false
	for _, r := range names(t, docker, baseID) {
		pulled = pulled || r == refs["base"]
	}
	if !pulled {
		t.Errorf("the job's node has no digest reference of %s: it did not pull from the registry", want)
	}
	mustDocker(t, docker, "service", "rm", job)
	// Docker 20.10 keeps the container of a completed job task after `docker service rm` (for
	// as long as the node stays in the swarm), so the test removes its own.
	if ids := strings.Fields(mustDocker(t, docker, "ps", "--all", "--quiet", "--filter", "label=com.docker.swarm.service.name="+job)); len(ids) > 0 {
		mustDocker(t, docker, append([]string{"rm", "--force"}, ids...)...)
	}

	if err := cleanup(context.Background()); err != nil {
		t.Fatalf("cleanup: %v", err)
	}
	cleaned = true
	if err := cleanup(context.Background()); err != nil {
		t.Fatalf("second cleanup: %v", err)
	}
	waitNoContainers(t, docker, project)
	if got := mustDocker(t, docker, "service", "ls", "--quiet", "--filter", "label=protobench.project="+project); got != "" {
		t.Errorf("services left after cleanup: %s", got)
	}
	if got := mustDocker(t, docker, "volume", "ls", "--quiet", "--filter", "label=protobench.project="+project); got != "" {
		t.Errorf("volumes left after cleanup: %s", got)
	}
	for _, r := range names(t, docker, baseID) {
		if strings.Contains(r, "/"+project+"/") {
			t.Errorf("reference left after cleanup: %s", r)
		}
	}
	if id := mustDocker(t, docker, "image", "inspect", "--format", "{{.ID}}", base); id != baseID {
		t.Errorf("%s changed: %s, was %s", base, id, baseID)
	}
}

// requireImage skips the test unless one of the images is on this daemon.
func requireImage(t *testing.T, docker, build string, refs ...string) {
	t.Helper()
	for _, r := range refs {
		if exec.Command(docker, "image", "inspect", r).Run() == nil {
			return
		}
	}
	t.Skipf("%s is not on this daemon: build it with `protobench images build %s`", strings.Join(refs, " or "), build)
}

func names(t *testing.T, docker, id string) []string {
	out := mustDocker(t, docker, "image", "inspect", "--format", "{{json .RepoTags}}|{{json .RepoDigests}}", id)
	tags, digests, _ := strings.Cut(out, "|")
	return append(jsonStrings(tags), jsonStrings(digests)...)
}

func waitJob(t *testing.T, docker, service string, limit time.Duration) string {
	t.Helper()
	var state string
	for deadline := time.Now().Add(limit); time.Now().Before(deadline); time.Sleep(500 * time.Millisecond) {
		state = mustDocker(t, docker, "service", "ps", "--no-trunc", "--format", "{{.CurrentState}} {{.Error}}", service)
		if strings.HasPrefix(state, "Complete") || strings.HasPrefix(state, "Failed") || strings.HasPrefix(state, "Rejected") {
			return state
		}
	}
	return state
}

func waitNoContainers(t *testing.T, docker, project string) {
	t.Helper()
	var out string
	for i := 0; i < 60; i++ {
		out = mustDocker(t, docker, "ps", "--all", "--format", "{{.ID}} {{.Names}} {{.Status}}", "--filter", "label=protobench.project="+project)
		if out == "" {
			return
		}
		time.Sleep(500 * time.Millisecond)
	}
	t.Errorf("containers left after cleanup: %s", out)
}

func freePort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", ":0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

func mustDocker(t *testing.T, docker string, args ...string) string {
	t.Helper()
	out, err := exec.Command(docker, args...).CombinedOutput()
	if err != nil {
		t.Fatalf("%s %s: %v: %s", docker, strings.Join(args, " "), err, out)
	}
	return strings.TrimSpace(string(out))
}

// syncBuffer is a bytes.Buffer safe for the test and Distribute to share.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}
