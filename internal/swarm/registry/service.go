package registry

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"syscall"
	"time"
)

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

// waitReady polls GET /v2/ at addr (host:port) until the registry answers, and gives up early
// with the task's error when swarm cannot run it.
func (d *distributor) waitReady(ctx context.Context, service, addr string) error {
	url := "http://" + addr + "/v2/"
	// Never through a proxy from the environment: this is the node's own address.
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
