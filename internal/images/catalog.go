package images

import (
	"context"

	"github.com/protobench/protobench/internal/targets"
)

// Pinned upstream references, pulled where a registry answers. Where none answers, the local
// equivalents below stand in for them.
const (
	UpstreamBase         = "debian:bookworm-slim"
	UpstreamGo           = "golang:1.26-bookworm"
	UpstreamK6           = "grafana/k6:1.8.1"
	UpstreamPrometheus   = "prom/prometheus:v2.53.3"
	UpstreamNodeExporter = "prom/node-exporter:v1.8.2"
	UpstreamCadvisor     = "gcr.io/cadvisor/cadvisor:v0.53.0"
	UpstreamGrafana      = "grafana/grafana:11.6.6"
	UpstreamRegistry     = "registry:2.8.3"
)

// LocalRepository is the repository part of every locally built image: protobench/<name>:<hash>.
const LocalRepository = "protobench/"

// spec describes how to get one logical image.
type spec struct {
	name string
	// upstream is pulled when a registry answers; without one it is used if already present.
	upstream string
	// dockerfile builds the local equivalent (repository-relative, the context is the repository).
	dockerfile string
	// alias: the same image as another logical name.
	alias string
	// notBuildable explains why there is no local equivalent.
	notBuildable string
	// custom replaces the generic upstream-then-Dockerfile path.
	custom func(e *ensurer, ctx context.Context, sp spec) (Image, error)
	// prepare adjusts the build context of a Dockerfile build (protobench's deps stub).
	prepare func(e *ensurer, c *buildContext) error
}

// catalog lists every logical image in resolution order: what an image is built from comes first.
// It is filled in init because its custom steps refer back to it (through ensurer.require).
var catalog []spec

func init() {
	catalog = []spec{
		{name: Base, upstream: UpstreamBase, custom: (*ensurer).base},
		{name: GoBuilder, dockerfile: "images/go-builder/Dockerfile", custom: (*ensurer).goBuilder},
		{name: Protobench, dockerfile: "images/protobench/Dockerfile", prepare: (*ensurer).protobenchContext},
	}
	catalog = append(catalog, toolImages()...)
	catalog = append(catalog, serverImages()...)
	catalog = append(catalog, []spec{
		{name: Prometheus, upstream: UpstreamPrometheus, dockerfile: "images/prometheus/Dockerfile"},
		{name: NodeExporter, upstream: UpstreamNodeExporter, dockerfile: "images/node-exporter/Dockerfile"},
		{name: Cadvisor, upstream: UpstreamCadvisor, dockerfile: "images/cadvisor/Dockerfile"},
		{name: Grafana, upstream: UpstreamGrafana, notBuildable: "Grafana cannot be built here: its frontend needs npm"},
		// The swarm engine's registry on the manager (internal/swarm/registry); no compose
		// service runs it.
		{name: Registry, upstream: UpstreamRegistry, dockerfile: "images/registry/Dockerfile"},
	}...)
}

// toolImages are the images the load tools' adapters declare (internal/tool's
// Capabilities.Image; the list, toolImageNames, is generated from them): each is built from
// images/<name>/Dockerfile unless toolImageSpecs says more about it.
func toolImages() []spec {
	out := make([]spec, 0, len(toolImageNames))
	for _, name := range toolImageNames {
		sp, ok := toolImageSpecs[name]
		if !ok {
			sp = spec{dockerfile: ToolDockerfile(name)}
		}
		sp.name = name
		out = append(out, sp)
	}
	return out
}

// ToolDockerfile is where a tool's image is built from: its folder under images/.
func ToolDockerfile(image string) string { return "images/" + image + "/Dockerfile" }

// toolImageSpecs are the tool images that take more than their Dockerfile: an upstream image to
// pull, a custom build, or another image's content.
var toolImageSpecs = map[string]spec{
	// protobench's generator runs from the protobench image.
	Loadgen: {alias: Protobench},
	K6:      {upstream: UpstreamK6, dockerfile: ToolDockerfile(K6)},
	// wrk2 where it can be built, Debian's wrk otherwise (ensurer.wrk).
	Wrk: {dockerfile: ToolDockerfile(Wrk), custom: (*ensurer).wrk},
}

// serverImages are the images of registry targets that do not run from the protobench image:
// each is built from the Dockerfile in its server folder.
func serverImages() []spec {
	var out []spec
	seen := map[string]bool{Protobench: true}
	for _, t := range targets.All() {
		if seen[t.Image] {
			continue
		}
		seen[t.Image] = true
		out = append(out, spec{name: t.Image, dockerfile: t.ServerDir + "/Dockerfile"})
	}
	return out
}

// wrk2Dockerfile builds wrk2 from GitHub; tried only where a registry answers.
const wrk2Dockerfile = "images/wrk2/Dockerfile"

// protobenchMains are the main packages the protobench image must contain (the image contract):
// the CLI and every registry target that runs from the protobench image.
var protobenchMains = func() []string {
	mains := []string{"cmd/protobench"}
	for _, t := range targets.All() {
		if t.Image == Protobench {
			mains = append(mains, t.ServerDir)
		}
	}
	return mains
}()

func specByName(name string) (spec, bool) {
	for _, s := range catalog {
		if s.name == name {
			return s, true
		}
	}
	return spec{}, false
}
