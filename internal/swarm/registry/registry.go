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
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
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

// placement decides how the registry is published and the host:port the nodes pull from:
// through the routing mesh on every node's loopback, or in host mode (the default without
// IPVS) from the manager's address, which is the loopback too when the swarm advertises it.
func placement(publish, pullHost, nodeAddr string, port int, ipvs bool) (mode, pullRegistry string, err error) {
	if publish == "" {
		publish = PublishHost
		if ipvs {
			publish = PublishIngress
		}
	}
	switch publish {
	case PublishIngress:
		return publish, loopback(port), nil
	case PublishHost:
		host := pullHost
		if host == "" {
			host = nodeAddr
		}
		if host == "" {
			return "", "", errors.New("host mode: the manager has no swarm address; set the address other nodes pull from (PullHost)")
		}
		if ip := net.ParseIP(host); host == "localhost" || ip != nil && ip.IsLoopback() {
			host = "127.0.0.1"
		}
		return publish, net.JoinHostPort(host, strconv.Itoa(port)), nil
	}
	return "", "", fmt.Errorf("registry publish mode %q: want %q or %q", publish, PublishIngress, PublishHost)
}

// managerNode returns this daemon's node ID and swarm address, or an error when it is not a
// swarm manager.
func (d *distributor) managerNode(ctx context.Context) (id, addr string, err error) {
	out, err := d.docker(ctx, "info", "--format", "{{.Swarm.LocalNodeState}} {{.Swarm.ControlAvailable}} {{.Swarm.NodeID}} {{.Swarm.NodeAddr}}")
	if err != nil {
		return "", "", err
	}
	f := strings.Fields(out)
	if len(f) < 3 || f[0] != "active" {
		return "", "", fmt.Errorf("this Docker daemon is in no swarm (state %q): the registry runs on a swarm manager", out)
	}
	if f[1] != "true" {
		return "", "", errors.New("this Docker daemon is a swarm worker: the registry must be started from a manager")
	}
	if len(f) > 3 {
		addr = f[3]
	}
	return f[2], addr, nil
}

func (d *distributor) inspectLocal(ctx context.Context, name, ref, pullRegistry string) (local, error) {
	out, err := d.docker(ctx, "image", "inspect", "--format", "{{.ID}} {{.Size}}", ref)
	if err != nil {
		return local{}, fmt.Errorf("image %s (%s) is not on this node: %w", name, ref, err)
	}
	f := strings.Fields(out)
	if len(f) != 2 {
		return local{}, fmt.Errorf("docker image inspect %s: unexpected output %q", ref, out)
	}
	size, _ := strconv.ParseInt(f[1], 10, 64)
	img := local{name: name, ref: ref, id: f[0], size: size}
	img.target = Ref(loopback(d.opts.Port), d.opts.Project, name, ref, img.id)
	img.pull = Ref(pullRegistry, d.opts.Project, name, ref, img.id)
	for _, r := range img.tags() {
		existed := false
		if id, err := d.docker(ctx, "image", "inspect", "--format", "{{.ID}}", r); err == nil {
			if id != img.id {
				return local{}, fmt.Errorf("%s already names another image (%s, not %s's %s); remove that tag or use another project",
					r, shortID(id), ref, shortID(img.id))
			}
			existed = true
		}
		img.existed = append(img.existed, existed)
	}
	return img, nil
}

func (d *distributor) registryImage(ctx context.Context) (string, error) {
	candidates := []string{LocalImage, UpstreamImage}
	if d.opts.Image != "" {
		candidates = []string{d.opts.Image}
	}
	for _, c := range candidates {
		if _, err := d.docker(ctx, "image", "inspect", "--format", "{{.ID}}", c); err == nil {
			return c, nil
		}
	}
	return "", fmt.Errorf("no registry image on this node (looked for %s): build it with `protobench images build registry`",
		strings.Join(candidates, ", "))
}

// checkPort fails when the port is published by a service of the swarm or bound on this node.
// Other nodes are not visible from here; a process bound there shadows the routing mesh only
// on that node, and its pulls then fail with the port in their error.
func (d *distributor) checkPort(ctx context.Context) error {
	port := d.opts.Port
	out, err := d.docker(ctx, "service", "ls", "--quiet")
	if err != nil {
		return err
	}
	if ids := strings.Fields(out); len(ids) > 0 {
		args := append([]string{"service", "inspect", "--format",
			`{{.Spec.Name}}{{range .Endpoint.Ports}} {{.PublishedPort}}{{end}}`}, ids...)
		out, err := d.docker(ctx, args...)
		if err != nil {
			return err
		}
		for _, line := range strings.Split(out, "\n") {
			f := strings.Fields(line)
			for _, p := range f[min(1, len(f)):] {
				if p == strconv.Itoa(port) {
					return fmt.Errorf("registry port %d is taken: service %s publishes it; choose another port", port, f[0])
				}
			}
		}
	}
	l, err := net.Listen("tcp", ":"+strconv.Itoa(port))
	if err != nil {
		if errors.Is(err, syscall.EADDRINUSE) {
			return fmt.Errorf("registry port %d is taken on this node (a process listens on it); choose another port", port)
		}
		return fmt.Errorf("checking registry port %d: %w", port, err)
	}
	return l.Close()
}

// waitReady polls GET /v2/ through the routing mesh until the registry answers, and gives up
// early with the task's error when swarm cannot run it.
func (d *distributor) waitReady(ctx context.Context, service string) error {
	url := fmt.Sprintf("http://127.0.0.1:%d/v2/", d.opts.Port)
	// Never through a proxy from the environment: this is the node's own loopback.
	client := &http.Client{Timeout: 2 * time.Second, Transport: &http.Transport{Proxy: nil}}
	deadline := time.Now().Add(d.opts.ReadyTimeout)
	var last string
	for i := 0; ; i++ {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		if err != nil {
			return err
		}
		resp, err := client.Do(req)
		if err == nil {
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK && resp.Header.Get("Docker-Distribution-Api-Version") == "registry/2.0" {
				return nil
			}
			last = fmt.Sprintf("%s answers %s without the registry API header: something else serves port %d", url, resp.Status, d.opts.Port)
			if resp.StatusCode != http.StatusOK {
				last = fmt.Sprintf("%s answers %s", url, resp.Status)
			}
		} else {
			last = err.Error()
		}
		if i%8 == 0 {
			if msg := d.taskFailure(ctx, service); msg != "" {
				return fmt.Errorf("the registry service %s cannot run: %s", service, msg)
			}
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("the registry service %s did not answer within %s (last: %s)", service, d.opts.ReadyTimeout, last)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(250 * time.Millisecond):
		}
	}
}

// taskFailure is the error of a failed or rejected task of the service, or "".
func (d *distributor) taskFailure(ctx context.Context, service string) string {
	out, err := d.docker(ctx, "service", "ps", "--no-trunc", "--format", "{{.CurrentState}}|{{.Error}}", service)
	if err != nil {
		return ""
	}
	for _, line := range strings.Split(out, "\n") {
		state, msg, _ := strings.Cut(line, "|")
		if strings.HasPrefix(state, "Rejected") || strings.HasPrefix(state, "Failed") {
			return strings.TrimSpace(state + ": " + msg)
		}
	}
	return ""
}

// tags are the local tags an image gets: the pushed one and, in host mode with another
// address, the one the nodes pull, so that tasks on the manager find the image here.
func (img local) tags() []string {
	if img.pull == img.target {
		return []string{img.target}
	}
	return []string{img.target, img.pull}
}

func (d *distributor) push(ctx context.Context, img local) error {
	for i, r := range img.tags() {
		if img.existed[i] {
			continue
		}
		if _, err := d.docker(ctx, "tag", img.id, r); err != nil {
			return err
		}
		d.mu.Lock()
		d.added = append(d.added, pushed{name: img.name, ref: r, id: img.id})
		d.mu.Unlock()
	}
	start := time.Now()
	if _, err := d.docker(ctx, "push", img.target); err != nil {
		return fmt.Errorf("pushing %s: %w", img.name, err)
	}
	fmt.Fprintf(d.opts.Log, "registry: %s (%s, %s) pushed in %s; nodes pull %s\n",
		img.name, img.ref, formatSize(img.size), time.Since(start).Round(100*time.Millisecond), img.pull)
	return nil
}

func formatSize(b int64) string {
	return fmt.Sprintf("%.0f MB", float64(b)/1e6)
}

// cleanup removes the registry service, waits for its container to go (so the port is free
// again), and removes the tags and digest references Distribute added. An image whose only
// name is one of ours keeps it: removing that name would delete the image.
func (d *distributor) cleanup(ctx context.Context) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.cleaned {
		return nil
	}
	d.cleaned = true
	var errs []error
	if d.service != "" {
		if out, err := d.docker(ctx, "service", "rm", d.service); err != nil && !strings.Contains(out, "not found") {
			errs = append(errs, err)
		} else if err := d.waitGone(ctx, d.service); err != nil {
			errs = append(errs, err)
		}
	}
	for _, p := range d.added {
		if err := d.untag(ctx, p); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// waitGone waits until no container of the service is left on this node.
func (d *distributor) waitGone(ctx context.Context, service string) error {
	var out string
	for i := 0; i < 120; i++ {
		var err error
		out, err = d.docker(ctx, "ps", "--all", "--quiet", "--filter", "label=com.docker.swarm.service.name="+service)
		if err != nil {
			return err
		}
		if out == "" {
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(250 * time.Millisecond):
		}
	}
	return fmt.Errorf("the containers of service %s are still there after 30s: %s", service, strings.Join(strings.Fields(out), " "))
}

// untag removes our tag of an image and the digest references its push and pulls added
// (127.0.0.1:<port>/<project>/<name>@sha256:...), which `docker image rm <tag>` leaves behind.
// It looks the image up by ID, so references are found even when the tag went first.
func (d *distributor) untag(ctx context.Context, p pushed) error {
	out, err := d.docker(ctx, "image", "inspect", "--format", "{{json .RepoTags}}|{{json .RepoDigests}}", p.id)
	if err != nil {
		return nil // the image is gone, and our names with it
	}
	tagsJSON, digestsJSON, _ := strings.Cut(out, "|")
	repo := p.ref[:strings.LastIndex(p.ref, ":")]
	var ours, others []string
	for _, r := range append(jsonStrings(tagsJSON), jsonStrings(digestsJSON)...) {
		if r == p.ref || strings.HasPrefix(r, repo+"@") {
			ours = append(ours, r)
		} else {
			others = append(others, r)
		}
	}
	if len(ours) > 0 && len(others) == 0 {
		fmt.Fprintf(d.opts.Log, "registry: kept %s: it is the only name of image %s\n", p.ref, shortID(p.id))
		return nil
	}
	var errs []error
	for _, r := range ours {
		if out, err := d.docker(ctx, "image", "rm", r); err != nil && !strings.Contains(out, "No such image") {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// jsonStrings parses a JSON string array as docker's {{json}} prints it; anything else is none.
func jsonStrings(s string) []string {
	var out []string
	_ = json.Unmarshal([]byte(strings.TrimSpace(s)), &out)
	return out
}

// docker runs the docker CLI and returns its trimmed output; the error carries the output's
// last lines.
func (d *distributor) docker(ctx context.Context, args ...string) (string, error) {
	var stdout, stderr bytes.Buffer
	cmd := exec.CommandContext(ctx, d.opts.Docker, args...)
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	out := strings.TrimSpace(stdout.String())
	if err != nil {
		msg := strings.TrimSpace(stderr.String())
		if msg == "" {
			msg = out
		}
		return msg, fmt.Errorf("%s %s: %v: %s", d.opts.Docker, strings.Join(args, " "), err, tail(msg, 5))
	}
	return out, nil
}

func tail(s string, n int) string {
	lines := strings.Split(s, "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}
