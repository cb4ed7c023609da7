package runner

import (
	"context"
	"fmt"
	"io"
	"sort"

	"github.com/protobench/protobench/internal/images"
	"github.com/protobench/protobench/internal/swarm"
	"github.com/protobench/protobench/internal/swarm/registry"
)

// useSwarm turns a prepared compose environment into a swarm run: the swarm stack as the
// orchestrator, its teardown (everything with the project's label), where Prometheus is, and
// what the records and run.json say about the engine. With more than one node the local images
// go to a registry service on the manager first (swarm/registry), since another node has none
// of them; on a single node they are used as they are.
func useSwarm(ctx context.Context, opts Options, root string, cs *composeStack, td *teardown, set images.Set, env *environment, stdout, stderr io.Writer) (*swarmStack, error) {
	// The server's cores are on another node (or, on one node, in no cpuset): no host index.
	env.measureHost = nil
	log := func(format string, args ...any) { fmt.Fprintf(stderr, "protobench: "+format+"\n", args...) }
	s, err := newSwarmStack(ctx, cs, opts.Project, root, log)
	if err != nil {
		return nil, err
	}
	td.c = swarmRemover{s}
	td.hint = fmt.Sprintf("the swarm services, network and configs labelled %s=%s. Remove them with:\n  %s",
		swarm.ProjectLabel, opts.Project, swarm.CleanupHint(opts.Docker, opts.Project))
	fmt.Fprintf(stdout, "protobench: swarm engine, %d node(s), placement %s\n", len(s.place.nodes), s.place.describe())
	if len(s.place.nodes) > 1 {
		local := map[string]string{}
		for name := range set {
			if set.Available(name) && images.EnvVar(name) != "" {
				local[name] = set[name].Ref
			}
		}
		// The registry image is built here when missing, like every image a run needs: a fresh
		// machine has none, and `protobench images build` of the run's images leaves it out.
		regImage, err := registryImage(ctx, opts, root, stdout)
		if err != nil {
			return nil, fmt.Errorf("hand the images to the swarm's nodes: %w", err)
		}
		td.arm() // the registry service and its tags are removed with the rest
		refs, cleanup, err := registry.Distribute(ctx, registry.Options{Docker: opts.Docker, Project: opts.Project, Images: local, Log: stdout, Image: regImage})
		if err != nil {
			return nil, fmt.Errorf("hand the images to the swarm's nodes: %w", err)
		}
		s.registryDone = cleanup
		names := make([]string, 0, len(refs))
		for name := range refs {
			names = append(names, name)
		}
		sort.Strings(names)
		for _, name := range names {
			env.imageEnv[images.EnvVar(name)] = refs[name]
		}
	}
	env.orchestrator = s
	env.engine = EngineSwarm
	env.annotate = s.annotate
	env.describe = s.describe
	var obs []string
	for _, o := range env.observability {
		if o != "grafana" {
			obs = append(obs, o)
		}
	}
	env.observability = obs
	env.locate = s.locate
	return s, nil
}

// registryImage makes the registry image available (pulled, cached or built, with the usual
// one line per image and progress) and returns its reference.
func registryImage(ctx context.Context, opts Options, root string, stdout io.Writer) (string, error) {
	set, err := images.Ensure(ctx, images.Options{RepoRoot: root, Log: stdout, Docker: opts.Docker, Only: []string{images.Registry}})
	if set == nil || !set.Available(images.Registry) {
		if err == nil {
			err = fmt.Errorf("the %s image is unavailable: %s", images.Registry, set[images.Registry].Note)
		}
		return "", err
	}
	return set[images.Registry].Ref, nil
}
