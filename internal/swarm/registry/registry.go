// Package registry hands locally built images to every node of a Docker Swarm. It starts a
// registry service (Debian's docker-registry, images/registry) on the manager this Docker CLI
// points at, publishes it through the ingress routing mesh, and pushes each image to it, so
// that every node pulls the image as 127.0.0.1:<port>/<project>/<name>:<tag>. Loopback
// registries are the one kind dockerd trusts without TLS and without daemon configuration, and
// the routing mesh makes the manager's registry answer on every node's loopback.
//
// The routing mesh needs IPVS in the kernel. Where it is missing, the registry is published in
// host mode on the manager instead: the manager still pushes to its own loopback, and the other
// nodes pull from the manager's address, which their dockerd must list in insecure-registries.
//
// The registry keeps its blobs in its container, so removing the service removes them; nothing
// is pushed anywhere else, and no public registry is assumed.
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
	// Port is the port published on every node; DefaultPort if 0. It must be free on all of
	// them: Distribute checks this node and the swarm's services, the routing mesh the rest.
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

// ServiceName is the name of the registry service of a project.
func ServiceName(project string) string { return project + "-registry" }

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

	mu      sync.Mutex
	service string   // the registry service once created
	added   []pushed // tags this call added
	cleaned bool
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
	name := ServiceName(o.Project)
	if out, err := d.docker(ctx, "service", "inspect", "--format", "{{.ID}}", name); err == nil {
		return fmt.Errorf("a service named %s exists already (%s), perhaps left by an interrupted run; remove it with `docker service rm %s`", name, out, name)
	}

	start := time.Now()
	args := []string{"service", "create", "--detach", "--quiet",
		"--name", name,
		"--label", "protobench.project=" + o.Project,
		"--container-label", "protobench.project=" + o.Project,
		"--constraint", "node.id==" + nodeID,
		"--publish", fmt.Sprintf("published=%d,target=%d,mode=%s,protocol=tcp", o.Port, containerPort, publish),
		// The image is local to this node: asking a registry for its digest would only wait
		// for a registry that does not answer.
		"--no-resolve-image",
		registryImage,
	}
	if out, err := d.docker(ctx, args...); err != nil {
		if strings.Contains(out, "already in use") {
			return fmt.Errorf("registry port %d is taken in the swarm: %s; choose another port", o.Port, out)
		}
		return fmt.Errorf("starting the registry service: %w", err)
	}
	d.mu.Lock()
	d.service = name
	d.mu.Unlock()
	if err := d.waitReady(ctx, name); err != nil {
		return err
	}
	ready := time.Since(start).Round(100 * time.Millisecond)
	if publish == PublishIngress {
		fmt.Fprintf(o.Log, "registry: %s (%s) answers on 127.0.0.1:%d of every node through the routing mesh, ready in %s\n",
			name, registryImage, o.Port, ready)
	} else {
		fmt.Fprintf(o.Log, "registry: %s (%s) published in host mode on this node, ready in %s; other nodes pull from %s",
			name, registryImage, ready, pullRegistry)
		if !strings.HasPrefix(pullRegistry, "127.") {
			fmt.Fprintf(o.Log, ", which their dockerd must list in insecure-registries")
		}
		if o.Publish == "" {
			fmt.Fprintf(o.Log, " (the routing mesh needs IPVS, which this kernel lacks)")
		}
		fmt.Fprintln(o.Log)
	}

	for _, img := range images {
		if err := d.push(ctx, img); err != nil {
			return err
		}
		d.refs[img.name] = img.pull
	}
	return nil
}
