package obsbench

import (
	"context"
	"errors"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/protobench/protobench/internal/compose"
	"github.com/protobench/protobench/internal/images"
)

// TestSetSwitchesOnlyTheChosen pauses and unpauses real containers standing in for the stack:
// with cadvisor the only one switched, "off" must freeze it and leave the others running.
func TestSetSwitchesOnlyTheChosen(t *testing.T) {
	ctx, base := baseImage(t)
	st := &stack{containers: map[string]string{}, switched: []string{"cadvisor"}}
	for _, name := range stackServices {
		out, err := exec.CommandContext(ctx, "docker", "run", "-d", "--rm", "--label", "protobench.obsbench.test=1", base, "sleep", "120").CombinedOutput()
		if err != nil {
			t.Fatalf("docker run: %v: %s", err, out)
		}
		id := strings.TrimSpace(string(out))
		defer exec.Command("docker", "rm", "-f", id).Run()
		st.containers[name] = id
	}
	paused := func() map[string]bool {
		m := map[string]bool{}
		for name, id := range st.containers {
			out, err := exec.CommandContext(ctx, "docker", "inspect", "-f", "{{.State.Paused}}", id).Output()
			if err != nil {
				t.Fatal(err)
			}
			m[name] = strings.TrimSpace(string(out)) == "true"
		}
		return m
	}
	if err := st.set(ctx, false); err != nil {
		t.Fatal(err)
	}
	if p := paused(); !p["cadvisor"] || p["prometheus"] || p["node-exporter"] {
		t.Errorf("off with only cadvisor switched: paused %v, want cadvisor alone", p)
	}
	if err := st.set(ctx, true); err != nil {
		t.Fatal(err)
	}
	if p := paused(); p["cadvisor"] || p["prometheus"] || p["node-exporter"] {
		t.Errorf("on: paused %v, want none", p)
	}
	st.switched = nil
	if err := st.set(ctx, false); err != nil {
		t.Fatal(err)
	}
	if p := paused(); !p["cadvisor"] || !p["prometheus"] || !p["node-exporter"] {
		t.Errorf("off with all switched: paused %v, want all", p)
	}
	if err := st.set(ctx, true); err != nil {
		t.Fatal(err)
	}
}

// baseImage skips the test without a Docker daemon, and otherwise returns a context bounded for
// the test and the local base image's reference, built if this machine lacks it.
func baseImage(t *testing.T) (context.Context, string) {
	t.Helper()
	if _, err := compose.CheckDocker(context.Background(), "docker"); errors.Is(err, compose.ErrDockerUnreachable) {
		t.Skipf("docker unreachable: %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Minute)
	t.Cleanup(cancel)
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	set, err := images.Ensure(ctx, images.Options{RepoRoot: root, Only: []string{images.Base}})
	if err != nil {
		t.Fatal(err)
	}
	return ctx, set[images.Base].Ref
}
