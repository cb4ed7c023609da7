package images

import (
	"bytes"
	"context"
	"errors"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/protobench/protobench/internal/compose"
)

// requireDocker skips the test when no Docker daemon answers; everything else is a failure.
func requireDocker(t *testing.T) {
	t.Helper()
	if _, err := compose.CheckDocker(context.Background(), "docker"); errors.Is(err, compose.ErrDockerUnreachable) {
		t.Skipf("docker unreachable: %v", err)
	}
}

// TestEnsureBase builds (or finds) the base image for real, twice: the second call must find the
// first one's image and build nothing.
func TestEnsureBase(t *testing.T) {
	requireDocker(t)
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Minute)
	defer cancel()
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	var log bytes.Buffer
	opts := Options{RepoRoot: root, Only: []string{Base}, Log: &log}
	first, err := Ensure(ctx, opts)
	if err != nil {
		t.Fatalf("%v\n%s", err, log.String())
	}
	img := first[Base]
	if img.Source == Unavailable || img.Ref == "" || img.ID == "" {
		t.Fatalf("base not available: %+v\n%s", img, log.String())
	}
	if len(first) != 1 {
		t.Errorf("Only base resolved %d images: %v", len(first), first)
	}

	log.Reset()
	second, err := Ensure(ctx, opts)
	if err != nil {
		t.Fatal(err)
	}
	again := second[Base]
	if again.Source == Built {
		t.Errorf("second Ensure rebuilt the base:\n%s", log.String())
	}
	if again.ID != img.ID {
		t.Errorf("second Ensure gave %s, first %s", again.ID, img.ID)
	}
	if want := "base: " + string(again.Source) + " " + again.Ref; !strings.Contains(log.String(), want) {
		t.Errorf("log %q lacks the line %q", log.String(), want)
	}

	out, err := exec.CommandContext(ctx, "docker", "run", "--rm", img.Ref, "cat", "/etc/debian_version").CombinedOutput()
	if err != nil {
		t.Fatalf("run the base: %v: %s", err, out)
	}
	if !strings.HasPrefix(strings.TrimSpace(string(out)), "12") {
		t.Errorf("base is not Debian 12 (bookworm): /etc/debian_version = %q", out)
	}
}
