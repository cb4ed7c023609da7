package registry

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"
)

// cleanup removes the registry services, waits for their containers to go (so the port is free
// again), removes their volume, and removes the tags and digest references Distribute added. An image whose only
// name is one of ours keeps it: removing that name would delete the image.
func (d *distributor) cleanup(ctx context.Context) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.cleaned {
		return nil
	}
	d.cleaned = true
	var errs []error
	servicesGone := true
	for _, s := range d.services {
		if out, err := d.docker(ctx, "service", "rm", s); err != nil && !strings.Contains(out, "not found") {
			errs, servicesGone = append(errs, err), false
		} else if err := d.waitGone(ctx, s); err != nil {
			errs, servicesGone = append(errs, err), false
		}
	}
	if d.volume != "" && servicesGone {
		if err := d.removeVolume(ctx, d.volume); err != nil {
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
