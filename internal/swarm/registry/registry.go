// Package registry hands locally built images to every node of a Docker Swarm. It runs a
// registry (Debian's docker-registry, images/registry) on the manager this Docker CLI points at,
// pushes each image to it, and returns the references the nodes pull.
//
// Nobody else may put an image there, so the registry is writable only while the manager
// pushes, and then only on the manager's loopback:
//
//  1. A push service on the host's network listens on 127.0.0.1:<port> alone. Loopback
//     registries are the one kind dockerd trusts without TLS or daemon configuration, and no
//     other machine reaches the manager's loopback. Its blobs go to a volume of the project.
//  2. Once every image is pushed, it is replaced by the serving registry on the same volume,
//     read-only (storage.maintenance.readonly): every write, from anywhere, is refused.
//     With IPVS in the kernel it is published through the ingress routing mesh, so that every
//     node pulls from its own 127.0.0.1:<port>; without, it listens on the manager's swarm
//     address only (host network), and the other nodes pull from <manager>:<port>, which their
//     dockerd must list in insecure-registries.
//
// The nodes pull by digest (<registry>/<project>/<name>@sha256:...), the digest the manager's
// own push gave, so that whatever a registry on the path answers, a node runs only the image
// the manager pushed. The one exception: in host mode on a manager whose own dockerd does not
// trust its swarm address, the manager could not resolve the digest reference (it pushed to
// its loopback) and its own tasks would find no image; then the nodes pull by tag, from the
// read-only registry, and the log says so.
//
// The registry's volume and services go at cleanup; nothing is pushed anywhere else, and no
// public registry is assumed.
package registry

import (
	"context"
	"fmt"
	"io"
	"os"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"
)

// DefaultPort is the port the registry is published on, on every node.
const DefaultPort = 5000

// DefaultProject names the suite's swarm objects when Options.Project is empty.
const DefaultProject = "protobench"

// LocalImage and UpstreamImage are the registry images Distribute looks for when Options.Image
// is empty, in this order: the Debian-based build (`protobench images build registry`) and the
// pinned upstream image (present where a registry answered `protobench images build`).
const (
	LocalImage    = "protobench/registry:latest"
	UpstreamImage = "registry:2.8.3"
)

// containerPort is where both registry images listen inside the container.
const containerPort = 5000

// How the registry's port is published (Options.Publish).
const (
	// PublishIngress publishes through the routing mesh: every node reaches the registry on
	// its own 127.0.0.1:<port>. It needs IPVS in the kernel of every node.
	PublishIngress = "ingress"
	// PublishHost publishes on the manager only: other nodes pull from <manager>:<port>.
	PublishHost = "host"
)

// ipvsDir exists when the kernel has IPVS (the ip_vs module is loaded; dockerd loads it when
// it sets up the ingress network).
const ipvsDir = "/proc/sys/net/ipv4/vs"

// Options configures Distribute.
type Options struct {
	// Docker is the docker CLI to run; "docker" if empty. It must point at a swarm manager.
	Docker string
	// Project labels the registry service (protobench.project=<project>) and prefixes its name
	// and the image repositories; DefaultProject if empty.
	Project string
	// Images maps logical names to local references (protobench/protobench:3f2a..., or an
	// image ID). Every one must be present on this daemon.
	Images map[string]string
	// Log receives a line for the registry and one per image (size, push time). Nil discards.
	Log io.Writer
	// Port is the registry's port; DefaultPort if 0. It must be free on this node and, with
	// the routing mesh, on every node: Distribute checks this node and the swarm's services.
	Port int
	// Image is the registry image to run; empty means LocalImage, else UpstreamImage, whichever
	// this daemon has.
	Image string
	// ReadyTimeout bounds the wait for the registry to answer; 2 minutes if 0.
	ReadyTimeout time.Duration
	// Publish is PublishIngress or PublishHost; empty means ingress where this host's kernel
	// has IPVS and host where it has not.
	Publish string
	// PullHost is the address the other nodes pull from in host mode; empty means the
	// manager's swarm address (docker info .Swarm.NodeAddr).
	PullHost string
}

// ServiceName is the name of the serving registry service of a project.
func ServiceName(project string) string { return project + "-registry" }

// pushServiceName is the registry service that takes the pushes, on the manager's loopback.
func pushServiceName(project string) string { return project + "-registry-push" }

// VolumeName is the volume on the manager that holds a project's registry storage.
func VolumeName(project string) string { return project + "-registry-data" }

// Ref is the reference a node pulls a pushed image by: the registry's host:port as that node
// reaches it, a repository per project and logical name, and the local reference's tag, or
// "id-" and the first 12 hex digits of the image ID when the local reference has no tag (an
// image ID or a digest).
func Ref(registry, project, name, localRef, imageID string) string {
	tag := tagOf(localRef)
	if tag == "" {
		tag = "id-" + shortID(imageID)
	}
	return fmt.Sprintf("%s/%s/%s:%s", registry, project, name, tag)
}

// loopback is the registry address the manager pushes to: dockerd trusts 127.0.0.0/8 without
// TLS.
func loopback(port int) string { return "127.0.0.1:" + strconv.Itoa(port) }

// tagOf returns the tag of a reference, or "" when it has none or is pinned by digest (a tag
// next to a digest names nothing the digest does not).
func tagOf(ref string) string {
	if strings.Contains(ref, "@") {
		return ""
	}
	last := ref[strings.LastIndex(ref, "/")+1:] // a registry's host:port comes before a '/'
	_, tag, ok := strings.Cut(last, ":")
	if !ok || looksLikeID(ref) {
		return ""
	}
	return tag
}

// looksLikeID says whether a reference is an image ID rather than a name.
func looksLikeID(ref string) bool {
	return strings.HasPrefix(ref, "sha256:") || regexp.MustCompile(`^[0-9a-f]{12,64}$`).MatchString(ref)
}

func shortID(id string) string {
	id = strings.TrimPrefix(id, "sha256:")
	if len(id) > 12 {
		id = id[:12]
	}
	return id
}

// pathComponent is the grammar of one repository path component (distribution/reference).
var pathComponent = regexp.MustCompile(`^[a-z0-9]+(?:(?:[._]|__|[-]+)[a-z0-9]+)*$`)

// validate checks what Ref puts into a repository name, so a bad name fails before anything starts.
func validate(project string, names []string) error {
	if !pathComponent.MatchString(project) {
		return fmt.Errorf("project %q cannot be part of an image repository (lower-case letters, digits and separators . _ -)", project)
	}
	for _, n := range names {
		if !pathComponent.MatchString(n) {
			return fmt.Errorf("image name %q cannot be part of an image repository (lower-case letters, digits and separators . _ -)", n)
		}
	}
	return nil
}

// pushed is one image tag Distribute added.
type pushed struct {
	name, ref, id string
}

// Distribute starts the project's registry service on this manager, pushes every image in
// opts.Images to it and returns the references services must use, keyed like opts.Images.
// cleanup removes the registry service and the tags Distribute added; it is never nil, may be
// called more than once, and wants a context that is still live (not the one a Ctrl-C
// cancelled). On an error Distribute has already cleaned up.
func Distribute(ctx context.Context, opts Options) (refs map[string]string, cleanup func(context.Context) error, err error) {
	d := &distributor{opts: opts}
	d.defaults()
	cleanup = d.cleanup
	if err := d.run(ctx); err != nil {
		cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Minute)
		defer cancel()
		if cerr := d.cleanup(cctx); cerr != nil {
			err = fmt.Errorf("%w (and cleaning up: %v)", err, cerr)
		}
		return nil, cleanup, err
	}
	return d.refs, cleanup, nil
}

type distributor struct {
	opts Options
	refs map[string]string

	mu       sync.Mutex
	services []string // the registry services created, the push one first
	volume   string   // the registry's storage once a service created it
	added    []pushed // tags this call added
	cleaned  bool
}

func (d *distributor) defaults() {
	if d.opts.Docker == "" {
		d.opts.Docker = "docker"
	}
	if d.opts.Project == "" {
		d.opts.Project = DefaultProject
	}
	if d.opts.Log == nil {
		d.opts.Log = io.Discard
	}
	if d.opts.Port == 0 {
		d.opts.Port = DefaultPort
	}
	if d.opts.ReadyTimeout == 0 {
		d.opts.ReadyTimeout = 2 * time.Minute
	}
}

// local is what Distribute knows about one image before it pushes it.
type local struct {
	name, ref, id string
	size          int64
	target        string // the loopback reference pushed from here
	pull          string // the reference the nodes pull: target, or the manager's address in host mode
	existed       []bool // target and pull were there before, on this very image: not ours to remove
}

func (d *distributor) run(ctx context.Context) error {
	o := d.opts
	d.refs = map[string]string{}
	if len(o.Images) == 0 {
		return nil
	}
	names := make([]string, 0, len(o.Images))
	for n := range o.Images {
		names = append(names, n)
	}
	sort.Strings(names)
	if err := validate(o.Project, names); err != nil {
		return err
	}
	if o.Port < 1 || o.Port > 65535 {
		return fmt.Errorf("registry port %d is not a TCP port", o.Port)
	}

	nodeID, nodeAddr, err := d.managerNode(ctx)
	if err != nil {
		return err
	}
	_, noIPVS := os.Stat(ipvsDir)
	publish, pullRegistry, err := placement(o.Publish, o.PullHost, nodeAddr, o.Port, noIPVS == nil)
	if err != nil {
		return err
	}
	// Every input is checked before anything is created.
	var images []local
	for _, n := range names {
		img, err := d.inspectLocal(ctx, n, o.Images[n], pullRegistry)
		if err != nil {
			return err
		}
		images = append(images, img)
	}
	registryImage, err := d.registryImage(ctx)
	if err != nil {
		return err
	}
	if err := d.checkPort(ctx); err != nil {
		return err
	}
	bind, err := bindAddress(publish, nodeAddr, o.Port)
	if err != nil {
		return err
	}
	for _, name := range []string{pushServiceName(o.Project), ServiceName(o.Project)} {
		if out, err := d.docker(ctx, "service", "inspect", "--format", "{{.ID}}", name); err == nil {
			return fmt.Errorf("a service named %s exists already (%s), perhaps left by an interrupted run; remove it with `docker service rm %s`", name, out, name)
		}
	}
	// A volume left by an interrupted run would put its images under this run's registry, and
	// cleanup would remove what Distribute did not create.
	if vol := VolumeName(o.Project); d.volumeExists(ctx, vol) {
		return fmt.Errorf("a volume named %s exists already, perhaps left by an interrupted run; remove it with `docker volume rm %s`", vol, vol)
	}
	return d.pushThenServe(ctx, images, nodeID, registryImage, publish, bind, pullRegistry)
}
