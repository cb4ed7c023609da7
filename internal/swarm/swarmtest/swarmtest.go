// Package swarmtest gives a test a swarm manager to work on: the swarm this daemon is already
// in (which it then leaves as it was), or a single-node swarm it initialises for the test and
// leaves again afterwards. Tests of several packages run at once under `go test ./...`, and
// swarm state belongs to the whole daemon, so every user of this package holds one file lock
// for the length of its test.
//
// Leaving a swarm is not harmless to containers outside it: dockerd (20.10,
// clearAttachableNetworks) disconnects every container from every attachable network when the
// node leaves, and docker-compose 1.x creates every network attachable, whatever the file says.
// A compose stack running meanwhile loses its network. So tests that run a compose stack hold
// the same lock shared (ComposeStack), a swarm is initialised only when no container is on an
// attachable network, and it is left only while that is still so.
package swarmtest

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/protobench/protobench/internal/swarm"
)

// LockFile serialises the swarm tests of all packages (and of a helper's manual experiments).
const LockFile = "/tmp/protobench-swarm-test.lock"

// Swarm is the swarm a test got.
type Swarm struct {
	Docker string // the docker CLI
	NodeID string // this daemon's node
	// Created says the test initialised the swarm (and leaves it at cleanup); false means it
	// joined a swarm that was there before and must leave the rest of it alone.
	Created bool
}

// Options change how Use initialises a swarm; the zero value advertises 127.0.0.1.
type Options struct {
	AdvertiseAddr string
}

// Docker is the docker CLI the swarm tests run: PROTOBENCH_DOCKER, or docker on the PATH.
func Docker() string {
	if d := os.Getenv("PROTOBENCH_DOCKER"); d != "" {
		return d
	}
	return "docker"
}

// Use returns a swarm manager for the test, or skips the test when Docker is unreachable or
// this daemon is a swarm worker.
func Use(t testing.TB) *Swarm { return UseWith(t, Options{}) }

// UseWith is Use with options for the swarm it may create.
func UseWith(t testing.TB, o Options) *Swarm {
	t.Helper()
	docker := Docker()
	if out, err := run(docker, "version", "--format", "{{.Server.Version}}"); err != nil {
		t.Skipf("docker unreachable: %v: %s", err, out)
	}
	t.Cleanup(lockAs(t, syscall.LOCK_EX))

	state, err := run(docker, "info", "--format", "{{.Swarm.LocalNodeState}} {{.Swarm.ControlAvailable}} {{.Swarm.NodeID}}")
	if err != nil {
		t.Fatalf("docker info: %v: %s", err, state)
	}
	f := strings.Fields(state)
	s := &Swarm{Docker: docker}
	switch {
	case len(f) >= 3 && f[0] == "active" && f[1] == "true":
		s.NodeID = f[2]
		t.Logf("using the swarm this daemon is already in (node %s); it is left as it was", s.NodeID)
		return s
	case len(f) >= 1 && f[0] == "active":
		t.Skip("this daemon is a swarm worker; the swarm tests need a manager")
	case len(f) >= 1 && f[0] != "inactive":
		t.Skipf("this daemon's swarm state is %q; the swarm tests need it inactive or a manager", state)
	}

	if atRisk := onAttachableNetworks(t, docker); len(atRisk) > 0 {
		t.Skipf("not initialising a swarm: leaving it afterwards would disconnect these containers from their attachable networks (dockerd does that on swarm leave, and docker-compose 1.x makes every network attachable): %s", strings.Join(atRisk, ", "))
	}
	hadGwbridge := networkExists(docker, "docker_gwbridge")
	addr := o.AdvertiseAddr
	if addr == "" {
		addr = "127.0.0.1"
	}
	if out, err := run(docker, "swarm", "init", "--advertise-addr", addr); err != nil {
		t.Fatalf("docker swarm init --advertise-addr %s: %v: %s", addr, err, out)
	}
	s.Created = true
	t.Cleanup(func() { Leave(t, docker, hadGwbridge) })
	id, err := run(docker, "info", "--format", "{{.Swarm.NodeID}}")
	if err != nil {
		t.Fatalf("docker info: %v: %s", err, id)
	}
	s.NodeID = strings.TrimSpace(id)
	t.Logf("initialised a single-node swarm (node %s, advertising %s); it is left at the end of the test", s.NodeID, addr)
	return s
}

// RequireAlone skips a test that needs a swarm of this node alone when the swarm it joined
// (one that was there before, perhaps another checkout's test sharing this daemon) has other
// nodes: their tasks and addresses would change what the test checks, and they are not the
// test's to remove.
func (s *Swarm) RequireAlone(t testing.TB) {
	t.Helper()
	if s.Created {
		return
	}
	out, err := run(s.Docker, "node", "ls", "--quiet")
	if err != nil {
		t.Fatalf("docker node ls: %v: %s", err, out)
	}
	var others []string
	for _, id := range strings.Fields(out) {
		if id != s.NodeID {
			others = append(others, id)
		}
	}
	if len(others) > 0 {
		t.Skipf("the swarm this daemon was already in has %d other node(s) (%s); this test needs a swarm of this node alone", len(others), strings.Join(others, ", "))
	}
}

// Leave leaves the swarm this package initialised and removes docker_gwbridge when the swarm
// brought it (hadGwbridge false). Registered as a cleanup, so it runs after the test's own.
func Leave(t testing.TB, docker string, hadGwbridge bool) {
	t.Helper()
	if atRisk := onAttachableNetworks(t, docker); len(atRisk) > 0 {
		t.Errorf("the test's swarm is NOT left: leaving would disconnect %s from their attachable networks; run `docker swarm leave --force` when they are gone", strings.Join(atRisk, ", "))
		return
	}
	if out, err := run(docker, "swarm", "leave", "--force"); err != nil {
		t.Errorf("docker swarm leave --force: %v: %s", err, out)
		return
	}
	if hadGwbridge {
		return
	}
	// The bridge lingers for a moment while the swarm's endpoints on it go.
	var last string
	for i := 0; i < 20; i++ {
		if !networkExists(docker, "docker_gwbridge") {
			return
		}
		out, err := run(docker, "network", "rm", "docker_gwbridge")
		if err == nil {
			return
		}
		last = out
		time.Sleep(250 * time.Millisecond)
	}
	t.Errorf("docker network rm docker_gwbridge: %s", last)
}

// RemoveProject removes every service, network, config and secret labelled
// protobench.project=project, and nothing else, the way a run's teardown does
// (swarm.Client.RemoveAll: services first, then, once their containers on this node are gone,
// the rest), and fails the test if anything is left after two minutes. A test calls it at
// cleanup, and before or between its own steps.
//
// RemoveAll waits for the containers of the removed services on this daemon. A replicated-job's
// container stays after its service is removed (moby/moby#42789), so the tasks a test runs once
// are replicated services never restarted (--replicas 1 --restart-condition none), as the runner's
// jobs are (swarm.Job); tasks on other nodes (internal/swarm/nodes) are their daemons' to remove.
func RemoveProject(t testing.TB, docker, project string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	c := &swarm.Client{Docker: docker, Project: project}
	if err := c.RemoveAll(ctx); err != nil {
		t.Errorf("removing swarm project %s: %v", project, err)
	}
}

// ComposeStack holds the swarm tests off while a test runs a compose stack: a swarm test's
// leave would cut the stack's containers off their network (see the package comment).
func ComposeStack(t testing.TB) {
	t.Helper()
	t.Cleanup(lockAs(t, syscall.LOCK_SH))
}

// onAttachableNetworks names the containers attached to a local attachable network, with the
// network, which a swarm leave would disconnect.
func onAttachableNetworks(t testing.TB, docker string) []string {
	t.Helper()
	ids, err := run(docker, "network", "ls", "--quiet", "--filter", "scope=local")
	if err != nil {
		t.Fatalf("docker network ls: %v: %s", err, ids)
	}
	var out []string
	for _, id := range strings.Fields(ids) {
		line, err := run(docker, "network", "inspect", "--format", `{{.Attachable}} {{.Name}}{{range .Containers}} {{.Name}}{{end}}`, id)
		if err != nil {
			continue // removed meanwhile
		}
		f := strings.Fields(line)
		if len(f) < 3 || f[0] != "true" {
			continue
		}
		for _, c := range f[2:] {
			out = append(out, c+" (network "+f[1]+")")
		}
	}
	return out
}

func networkExists(docker, name string) bool {
	_, err := run(docker, "network", "inspect", "--format", "{{.ID}}", name)
	return err == nil
}

func lockAs(t testing.TB, how int) func() {
	t.Helper()
	f, err := os.OpenFile(LockFile, os.O_CREATE|os.O_RDWR, 0o666)
	if err != nil {
		t.Fatalf("swarm test lock: %v", err)
	}
	start := time.Now()
	if err := syscall.Flock(int(f.Fd()), how); err != nil {
		f.Close()
		t.Fatalf("swarm test lock %s: %v", LockFile, err)
	}
	if waited := time.Since(start); waited > time.Second {
		t.Logf("waited %s for another package's swarm or compose test (%s)", waited.Round(time.Second), LockFile)
	}
	return func() {
		_ = syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
		f.Close()
	}
}

func run(name string, args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	out, err := exec.CommandContext(ctx, name, args...).CombinedOutput()
	if err != nil {
		return strings.TrimSpace(string(out)), fmt.Errorf("%s %s: %w", name, strings.Join(args, " "), err)
	}
	return strings.TrimSpace(string(out)), nil
}
