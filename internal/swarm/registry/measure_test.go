package registry

import (
	"context"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/protobench/protobench/internal/swarm/swarmtest"
)

// TestMeasurePush gives the figures docs/swarm-full.md quotes: how long Distribute takes to push
// the protobench and python-grpc images into a fresh registry (its log gives each push), twice
// (each Distribute starts a fresh registry: its storage goes with it). The serving registry is
// read-only, so pushing again into it is no longer possible (the re-push figure in the docs
// predates that). It loads the machine, so it runs only when asked:
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
	sw := swarmtest.Use(t)
	sw.RequireAlone(t)
	docker = sw.Docker
	port := freePort(t)
	ctx := context.Background()
	for round := 1; round <= 2; round++ {
		log := testLog{t, fmt.Sprintf("distribute #%d: ", round)}
		start := time.Now()
		_, cleanup, err := Distribute(ctx, Options{Docker: docker, Project: "pbtest-measure", Port: port, Images: images, Log: log})
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("distribute #%d: %s in all", round, time.Since(start).Round(100*time.Millisecond))
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
