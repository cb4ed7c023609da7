package registry

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

// TestMeasurePush gives the figures docs/swarm-full.md quotes: how long pushing the protobench and
// python-grpc images takes into a fresh registry, again into the same registry (every layer
// already there), and in a second Distribute (a fresh registry again: its storage goes with
// the service). It loads the machine, so it runs only when asked:
//
//	PROTOBENCH_REGISTRY_MEASURE=1 go test -run TestMeasurePush -v ./internal/swarm/registry
//
// It takes the swarm test lock itself; wrapping it in flock on that same file would wait forever.
func TestMeasurePush(t *testing.T) {
	if os.Getenv("PROTOBENCH_REGISTRY_MEASURE") == "" {
		t.Skip("set PROTOBENCH_REGISTRY_MEASURE=1 to measure push times")
	}
	docker := "docker"
	requireImage(t, docker, "registry", LocalImage, UpstreamImage)
	images := map[string]string{"protobench": "protobench/protobench:latest", "python-grpc": "protobench/python-grpc:latest"}
	for name, ref := range images {
		requireImage(t, docker, name, ref)
	}
	docker = swarmtest.Use(t).Docker
	port := freePort(t)
	ctx := context.Background()
	for round := 1; round <= 2; round++ {
		log := testLog{t, fmt.Sprintf("distribute #%d: ", round)}
		start := time.Now()
		refs, cleanup, err := Distribute(ctx, Options{Docker: docker, Project: "pbtest-measure", Port: port, Images: images, Log: log})
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("distribute #%d: %s in all", round, time.Since(start).Round(100*time.Millisecond))
		for _, name := range []string{"protobench", "python-grpc"} {
			start := time.Now()
			if out, err := exec.Command(docker, "push", refs[name]).CombinedOutput(); err != nil {
				t.Fatalf("%v: %s", err, out)
			}
			t.Logf("distribute #%d: push %s again into the same registry: %s", round, name, time.Since(start).Round(10*time.Millisecond))
		}
		if err := cleanup(ctx); err != nil {
			t.Fatal(err)
		}
	}
}

// testLog writes Distribute's lines to the test log.
type testLog struct {
	t      *testing.T
	prefix string
}

func (l testLog) Write(p []byte) (int, error) {
	l.t.Log(l.prefix + strings.TrimSuffix(string(p), "\n"))
	return len(p), nil
}
