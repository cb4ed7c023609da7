package engine

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sort"

	"github.com/protobench/protobench/internal/images"
	"github.com/protobench/protobench/internal/swarm"
	"github.com/protobench/protobench/internal/swarm/registry"
)

// Capabilities: a swarm sets no cpusets (only CPU quotas), its server cores may be on another
// machine, and Grafana's provisioning is a folder of this checkout, which another node lacks.
func (s *Swarm) Capabilities() Capabilities {
	clients := len(s.place.clients)
	if s.place.single || clients == 0 {
		clients = 1
	}
	return Capabilities{Name: NameSwarm, ClientNodes: clients,
		CleanupHint: fmt.Sprintf("the swarm services, network and configs labelled %s=%s. Remove them with:\n  %s",
			swarm.ProjectLabel, s.project, swarm.CleanupHint(s.calls.docker, s.project))}
}

// Prepare hands the local images to the swarm's nodes. With more than one node they go to a
// registry service on the manager first (swarm/registry), since another node has none of them,
// and imageEnv then names them there; on a single node they are used as they are.
func (s *Swarm) Prepare(ctx context.Context, set images.Set, imageEnv map[string]string) error {
	if len(s.place.nodes) <= 1 {
		return nil
	}
	local := map[string]string{}
	for name := range set {
		if set.Available(name) && images.EnvVar(name) != "" {
			local[name] = set[name].Ref
		}
	}
	// The registry image is built here when missing, like every image a run needs: a fresh
	// machine has none, and `protobench images build` of the run's images leaves it out.
	regImage, err := s.registryImage(ctx)
	if err != nil {
		return fmt.Errorf("hand the images to the swarm's nodes: %w", err)
	}
	s.calls.arm() // the registry service and its tags are removed with the rest
	refs, cleanup, err := registry.Distribute(ctx, registry.Options{Docker: s.calls.docker, Project: s.project, Images: local, Log: s.stdout, Image: regImage})
	if err != nil {
		return fmt.Errorf("hand the images to the swarm's nodes: %w", err)
	}
	s.registryDone = cleanup
	names := make([]string, 0, len(refs))
	for name := range refs {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		imageEnv[images.EnvVar(name)] = refs[name]
	}
	return nil
}

// registryImage makes the registry image available (pulled, cached or built, with the usual
// one line per image and progress) and returns its reference.
func (s *Swarm) registryImage(ctx context.Context) (string, error) {
	set, err := images.Ensure(ctx, images.Options{RepoRoot: s.repoRoot, Log: s.stdout, Docker: s.calls.docker, Only: []string{images.Registry}})
	if set == nil || !set.Available(images.Registry) {
		if err == nil {
			err = fmt.Errorf("the %s image is unavailable: %s", images.Registry, set[images.Registry].Note)
		}
		return "", err
	}
	return set[images.Registry].Ref, nil
}

// PlaceStack cannot move anything: swarm services have no cpuset (Capabilities.PinsCores is
// false, so the runner never asks).
func (s *Swarm) PlaceStack(context.Context, []string, string) error {
	return errors.New("swarm services have no cpuset")
}

func (s *Swarm) Lost() error { return s.calls.lost() }

// ForceRemove removes everything with the project's label at once.
func (s *Swarm) ForceRemove(ctx context.Context) error { return s.sw.RemoveAll(ctx) }

// ProjectContainers lists the project's services: what a teardown that stops early leaves.
func (s *Swarm) ProjectContainers(ctx context.Context) ([]string, error) {
	o, err := s.sw.List(ctx)
	return o.Services, err
}

// PortSetting is the environment's value of a published port (PROTOBENCH_PROMETHEUS_PORT and
// the like), or its default.
func PortSetting(env, def string) string {
	if v := os.Getenv(env); v != "" {
		return v
	}
	return def
}
