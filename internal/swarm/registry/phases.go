package registry

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strconv"
	"strings"
	"time"
)

// storageDir is where both registry images keep their blobs here: Debian's docker-registry's
// own folder (owned by its user, which a new volume inherits), set for the upstream image too.
const storageDir = "/var/lib/docker-registry"

// bindAddress is the host:port the serving registry listens on in host mode: the manager's
// swarm address (the loopback when the swarm advertises it), never every interface. With the
// routing mesh it is "": the registry listens in its container, and the mesh publishes it.
func bindAddress(publish, nodeAddr string, port int) (string, error) {
	if publish == PublishIngress {
		return "", nil
	}
	ip := net.ParseIP(nodeAddr)
	if ip == nil {
		return "", fmt.Errorf("host mode: the manager's swarm address %q is not an IP address to bind the registry to", nodeAddr)
	}
	if ip.IsLoopback() {
		return loopback(port), nil
	}
	return net.JoinHostPort(ip.String(), strconv.Itoa(port)), nil
}

// registryService is one registry service: where it listens and whether it takes writes.
type registryService struct {
	name     string
	hostAddr string // host:port on the host's network; "" to publish through the routing mesh
	readOnly bool
}

// pushThenServe pushes every image to a registry on the manager's loopback, replaces it with a
// read-only one on the same storage where the nodes pull, and fills d.refs.
func (d *distributor) pushThenServe(ctx context.Context, images []local, nodeID, image, publish, bind, pullRegistry string) error {
	o := d.opts
	start := time.Now()
	push := registryService{name: pushServiceName(o.Project), hostAddr: loopback(o.Port)}
	if err := d.startService(ctx, push, nodeID, image); err != nil {
		return err
	}
	if err := d.waitReady(ctx, push.name, push.hostAddr); err != nil {
		return err
	}
	fmt.Fprintf(o.Log, "registry: %s (%s) takes the pushes on %s only, ready in %s\n",
		push.name, image, push.hostAddr, time.Since(start).Round(100*time.Millisecond))
	digests := map[string]string{}
	for _, img := range images {
		digest, err := d.push(ctx, img)
		if err != nil {
			return err
		}
		digests[img.name] = digest
	}
	if err := d.removeService(ctx, push.name); err != nil {
		return err
	}

	start = time.Now()
	serve := registryService{name: ServiceName(o.Project), hostAddr: bind, readOnly: true}
	if err := d.startService(ctx, serve, nodeID, image); err != nil {
		return err
	}
	ready := loopback(o.Port)
	if bind != "" {
		ready = bind
	}
	if err := d.waitReady(ctx, serve.name, ready); err != nil {
		return err
	}
	took := time.Since(start).Round(100 * time.Millisecond)
	if publish == PublishIngress {
		fmt.Fprintf(o.Log, "registry: %s serves read-only on 127.0.0.1:%d of every node through the routing mesh, ready in %s\n", serve.name, o.Port, took)
	} else {
		fmt.Fprintf(o.Log, "registry: %s serves read-only on %s only, ready in %s", serve.name, bind, took)
		if !strings.HasPrefix(pullRegistry, "127.") {
			fmt.Fprintf(o.Log, "; the other nodes pull from %s, which their dockerd must list in insecure-registries", pullRegistry)
		}
		if o.Publish == "" {
			fmt.Fprintf(o.Log, " (the routing mesh needs IPVS, which this kernel lacks)")
		}
		fmt.Fprintln(o.Log)
	}
	for _, img := range images {
		d.refs[img.name] = d.pullRef(ctx, img, digests[img.name])
		fmt.Fprintf(o.Log, "registry: nodes pull %s as %s\n", img.name, d.refs[img.name])
	}
	return nil
}

// pullRef is the reference the nodes pull an image by: its repository where they reach the
// registry, pinned to the digest of the manager's push. Where that repository is not the one
// the manager pushed to (host mode), the manager pulls the digest reference itself first, so
// that its own tasks find the image by it; where its dockerd refuses (it does not trust its own
// swarm address), the tag it holds locally is used, and the log says why.
func (d *distributor) pullRef(ctx context.Context, img local, digest string) string {
	pinned := repoOf(img.pull) + "@" + digest
	if img.pull == img.target {
		return pinned
	}
	if _, err := d.docker(ctx, "pull", "--quiet", pinned); err != nil {
		fmt.Fprintf(d.opts.Log, "registry: this manager's dockerd cannot pull %s (list %s under insecure-registries on the manager too, to pin the nodes' pulls to the digest): %s; the nodes pull it by tag from the read-only registry\n",
			pinned, strings.SplitN(img.pull, "/", 2)[0], lastLine(err.Error()))
		return img.pull
	}
	return pinned
}

// repoOf is a reference without its tag.
func repoOf(ref string) string {
	if i := strings.LastIndex(ref, ":"); i > strings.LastIndex(ref, "/") {
		return ref[:i]
	}
	return ref
}

// startService creates a registry service on the manager, its storage on the project's volume.
func (d *distributor) startService(ctx context.Context, r registryService, nodeID, image string) error {
	o := d.opts
	vol := VolumeName(o.Project)
	args := []string{"service", "create", "--detach", "--quiet",
		"--name", r.name,
		"--label", "protobench.project=" + o.Project,
		"--container-label", "protobench.project=" + o.Project,
		"--constraint", "node.id==" + nodeID,
		"--mount", fmt.Sprintf("type=volume,source=%s,target=%s,volume-label=protobench.project=%s", vol, storageDir, o.Project),
		"--env", "REGISTRY_STORAGE_FILESYSTEM_ROOTDIRECTORY=" + storageDir,
		// The image is local to this node: asking a registry for its digest would only wait
		// for a registry that does not answer.
		"--no-resolve-image",
	}
	if r.hostAddr != "" {
		args = append(args, "--network", "host", "--env", "REGISTRY_HTTP_ADDR="+r.hostAddr)
	} else {
		args = append(args, "--publish", fmt.Sprintf("published=%d,target=%d,mode=ingress,protocol=tcp", o.Port, containerPort))
	}
	if r.readOnly {
		args = append(args, "--env", `REGISTRY_STORAGE_MAINTENANCE_READONLY={"enabled": true}`)
	}
	args = append(args, image)
	d.mu.Lock()
	d.volume = vol
	d.mu.Unlock()
	if out, err := d.docker(ctx, args...); err != nil {
		if strings.Contains(out, "already in use") {
			return fmt.Errorf("registry port %d is taken in the swarm: %s; choose another port", o.Port, out)
		}
		return fmt.Errorf("starting the registry service %s: %w", r.name, err)
	}
	d.mu.Lock()
	d.services = append(d.services, r.name)
	d.mu.Unlock()
	return nil
}

// removeService removes a registry service and waits until its container is gone, so that its
// port and volume are free again.
func (d *distributor) removeService(ctx context.Context, name string) error {
	if out, err := d.docker(ctx, "service", "rm", name); err != nil && !strings.Contains(out, "not found") {
		return err
	}
	if err := d.waitGone(ctx, name); err != nil {
		return err
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	for i, s := range d.services {
		if s == name {
			d.services = append(d.services[:i], d.services[i+1:]...)
			break
		}
	}
	return nil
}

func (d *distributor) volumeExists(ctx context.Context, vol string) bool {
	_, err := d.docker(ctx, "volume", "inspect", "--format", "{{.Name}}", vol)
	return err == nil
}

// removeVolume removes the registry's volume; one never created is no error.
func (d *distributor) removeVolume(ctx context.Context, vol string) error {
	var last error
	for i := 0; i < 20; i++ {
		out, err := d.docker(ctx, "volume", "rm", vol)
		if err == nil || strings.Contains(out, "No such volume") || strings.Contains(out, "no such volume") {
			return nil
		}
		last = err
		// A container just removed may hold it for a moment more.
		select {
		case <-ctx.Done():
			return errors.Join(last, ctx.Err())
		case <-time.After(250 * time.Millisecond):
		}
	}
	return last
}

func lastLine(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.LastIndex(s, "\n"); i >= 0 {
		return strings.TrimSpace(s[i+1:])
	}
	return s
}
