package registry

import (
	"context"
	"fmt"
	"strings"
	"time"
)

// tags are the local tags an image gets: the pushed one and, in host mode with another
// address, the one the nodes pull, so that tasks on the manager find the image here.
func (img local) tags() []string {
	if img.pull == img.target {
		return []string{img.target}
	}
	return []string{img.target, img.pull}
}

// push tags and pushes one image to the loopback registry and returns the digest the registry
// gave its manifest, as this daemon recorded it.
func (d *distributor) push(ctx context.Context, img local) (string, error) {
	for i, r := range img.tags() {
		if img.existed[i] {
			continue
		}
		if _, err := d.docker(ctx, "tag", img.id, r); err != nil {
			return "", err
		}
		d.mu.Lock()
		d.added = append(d.added, pushed{name: img.name, ref: r, id: img.id})
		d.mu.Unlock()
	}
	start := time.Now()
	if _, err := d.docker(ctx, "push", img.target); err != nil {
		return "", fmt.Errorf("pushing %s: %w", img.name, err)
	}
	out, err := d.docker(ctx, "image", "inspect", "--format", "{{json .RepoDigests}}", img.id)
	if err != nil {
		return "", err
	}
	digest := ""
	for _, r := range jsonStrings(out) {
		if repo, dg, ok := strings.Cut(r, "@"); ok && repo == repoOf(img.target) {
			digest = dg
		}
	}
	if !strings.HasPrefix(digest, "sha256:") {
		return "", fmt.Errorf("pushing %s: the push left no digest reference of %s (RepoDigests %s)", img.name, repoOf(img.target), out)
	}
	fmt.Fprintf(d.opts.Log, "registry: %s (%s, %s) pushed in %s as %s\n",
		img.name, img.ref, formatSize(img.size), time.Since(start).Round(100*time.Millisecond), digest)
	return digest, nil
}

func formatSize(b int64) string {
	return fmt.Sprintf("%.0f MB", float64(b)/1e6)
}
