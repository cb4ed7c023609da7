// Package images makes sure every container image a protobench run needs is present, by the
// cheapest honest path: pull the pinned upstream image where a registry answers, otherwise build
// a local equivalent (a debootstrap Debian base, a Go builder with the host's toolchain and extra
// CA certificates, Debian's Prometheus and node-exporter, a cAdvisor main on the cAdvisor
// library, ghz and k6 from pinned Go sources). Local images are tagged with a hash of everything
// that goes into them, so a re-run finds them and rebuilds nothing.
package images

import (
	"io"
	"sort"
	"strings"
)

// Source says how an image was obtained.
type Source string

// How an image was obtained; printed once per image.
const (
	// Pulled: the pinned upstream image was pulled from a registry.
	Pulled Source = "pulled"
	// Built: a local equivalent was built in this call.
	Built Source = "built"
	// Cached: the image was already present (a local build with the same content hash, or an
	// upstream image pulled earlier while no registry answers now).
	Cached Source = "cached"
	// Unavailable: the image could not be had; Image.Note says why.
	Unavailable Source = "unavailable"
)

// Logical image names, the keys of a Set.
const (
	Base         = "base"
	GoBuilder    = "go-builder"
	Protobench   = "protobench"
	Loadgen      = "loadgen"
	K6           = "k6"
	Wrk          = "wrk"
	Prometheus   = "prometheus"
	NodeExporter = "node-exporter"
	Cadvisor     = "cadvisor"
	Grafana      = "grafana"
	Registry     = "registry"
)

// Names lists every logical image in the order Ensure resolves them (dependencies first).
func Names() []string {
	names := make([]string, len(catalog))
	for i, s := range catalog {
		names[i] = s.name
	}
	return names
}

// Image is one resolved image.
type Image struct {
	Name   string `json:"name"`          // logical name
	Ref    string `json:"ref,omitempty"` // reference to run (tag), empty when Unavailable
	ID     string `json:"id,omitempty"`  // docker image ID (sha256:...), empty when Unavailable or in a dry run
	Source Source `json:"source"`
	// Upstream is the pinned upstream reference for this logical image, if it has one.
	Upstream string `json:"upstream,omitempty"`
	// Variant names what the image holds when that differs by path: "wrk2" or "wrk" for wrk,
	// "debootstrap" or "debian:bookworm-slim" for base.
	Variant string `json:"variant,omitempty"`
	// Note is a short human explanation (why unavailable, what stands in for what).
	Note string `json:"note,omitempty"`
}

// Set maps logical names to resolved images.
type Set map[string]Image

// Sorted returns the images in catalog order, then any unknown names alphabetically.
func (s Set) Sorted() []Image {
	order := map[string]int{}
	for i, n := range Names() {
		order[n] = i
	}
	out := make([]Image, 0, len(s))
	for _, img := range s {
		out = append(out, img)
	}
	sort.Slice(out, func(i, j int) bool {
		oi, iok := order[out[i].Name]
		oj, jok := order[out[j].Name]
		switch {
		case iok && jok:
			return oi < oj
		case iok != jok:
			return iok
		default:
			return out[i].Name < out[j].Name
		}
	})
	return out
}

// Available reports whether the named image can be run.
func (s Set) Available(name string) bool {
	img, ok := s[name]
	return ok && img.Source != Unavailable && img.Ref != ""
}

// Options configures Ensure.
type Options struct {
	// RepoRoot is the repository root: build contexts and Dockerfiles are read from it.
	RepoRoot string
	// ExtraCADir holds extra CA certificates (*.crt) for the Go builder, for TLS-intercepting
	// proxies. Empty means DefaultExtraCADir when it exists; "none" means no extra CAs.
	ExtraCADir string
	// Log receives one line per image (and a line about the registry). Nil discards.
	Log io.Writer
	// BuildLog receives the output of docker builds, pulls and debootstrap. Nil discards it;
	// the tail of a failed step's output is part of its error either way.
	BuildLog io.Writer
	// DryRun prints the commands that would pull or build instead of running them. Read-only
	// queries (docker image inspect) still run.
	DryRun bool
	// Only restricts Ensure to these logical names and what they are built from. Empty: all.
	Only []string
	// Offline skips the registry probe and all pulls, as if no registry answered: upstream images
	// already present are used, the rest is built (to test the local builds on a machine that
	// has a registry, remove the upstream images first).
	Offline bool
	// Docker is the docker CLI to run; "docker" if empty.
	Docker string
	// GoRoot is the host Go toolchain copied into the Go builder when golang:1.26-bookworm cannot
	// be had; empty means `go env GOROOT`, then the GOROOT this binary was built with.
	GoRoot string
	// DebianMirror is the mirror debootstrap and the base's apt sources use;
	// DefaultDebianMirror if empty.
	DebianMirror string
}

// DefaultExtraCADir is where Debian keeps locally added CA certificates.
const DefaultExtraCADir = "/usr/local/share/ca-certificates"

// DefaultDebianMirror is Debian's CDN over plain http, which apt verifies by signature.
const DefaultDebianMirror = "http://deb.debian.org/debian"

// DefaultRef is the reference a hand-run compose file falls back to for a logical image (the
// default of its EnvVar): the pinned upstream where the catalog has one, otherwise the local
// build's :latest tag (an alias's, for an alias).
func DefaultRef(name string) string {
	sp, ok := specByName(name)
	if ok && sp.alias != "" {
		return DefaultRef(sp.alias)
	}
	if ok && sp.upstream != "" {
		return sp.upstream
	}
	return LocalRepository + name + ":latest"
}

// EnvVars gives the compose environment variables that select each image, for every image in the
// set that can be run. The compose file has defaults for the rest (the pinned upstream refs, or
// protobench/<name>:latest for local-only images).
func EnvVars(s Set) map[string]string {
	env := map[string]string{}
	for name := range s {
		if s.Available(name) && EnvVar(name) != "" {
			env[EnvVar(name)] = s[name].Ref
		}
	}
	if img, ok := s[Wrk]; ok && img.Variant != "" && s.Available(Wrk) {
		env["PROTOBENCH_WRK_FLAVOR"] = img.Variant
	}
	return env
}

// EnvVar is the compose variable naming a logical image: PROTOBENCH_<NAME>_IMAGE, except the
// protobench image, which the compose file calls the server image. base and go-builder are
// build-only and registry runs only under the swarm engine, so they have none.
func EnvVar(name string) string {
	switch name {
	case Base, GoBuilder, Registry:
		return ""
	case Protobench:
		return "PROTOBENCH_SERVER_IMAGE"
	}
	return "PROTOBENCH_" + strings.ToUpper(strings.ReplaceAll(name, "-", "_")) + "_IMAGE"
}
