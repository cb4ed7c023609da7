// Package promconfig renders Prometheus' configuration for a swarm run: the checkout's
// compose/prometheus/prometheus-swarm.yml with the project and its overlay network filled in. The
// runner hands the result to the Prometheus service as a swarm config.
package promconfig

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"regexp"

	"github.com/protobench/protobench/internal/repo"
)

// File is the template's path inside the checkout.
const File = "compose/prometheus/prometheus-swarm.yml"

// The placeholders the template holds.
const (
	ProjectPlaceholder = "${PROTOBENCH_PROJECT}"
	NetworkPlaceholder = "${PROTOBENCH_SWARM_NETWORK}"
)

// name is what a project or network name may be: Docker's object names, minus anything that
// would need quoting in YAML or could end a quoted string.
var name = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_.-]*$`)

// Render reads the template from the checkout (repo.Root) and fills it in for project and its
// overlay network.
func Render(project, network string) ([]byte, error) {
	root, err := repo.Root()
	if err != nil {
		return nil, fmt.Errorf("promconfig: %w", err)
	}
	tmpl, err := os.ReadFile(filepath.Join(root, File))
	if err != nil {
		return nil, fmt.Errorf("promconfig: %w", err)
	}
	return RenderTemplate(tmpl, project, network)
}

// RenderTemplate fills in a template already read. The network name goes into a relabelling
// regex (Prometheus anchors it), so it is quoted: a dot in a name must not match any character.
func RenderTemplate(tmpl []byte, project, network string) ([]byte, error) {
	for what, v := range map[string]string{"project": project, "network": network} {
		if !name.MatchString(v) {
			return nil, fmt.Errorf("promconfig: %s name %q: want letters, digits, '_', '.' or '-', starting with a letter or digit", what, v)
		}
	}
	for _, p := range []string{ProjectPlaceholder, NetworkPlaceholder} {
		if !bytes.Contains(tmpl, []byte(p)) {
			return nil, fmt.Errorf("promconfig: the template has no %s", p)
		}
	}
	out := bytes.ReplaceAll(tmpl, []byte(ProjectPlaceholder), []byte(project))
	out = bytes.ReplaceAll(out, []byte(NetworkPlaceholder), []byte(regexp.QuoteMeta(network)))
	if i := bytes.Index(out, []byte("${")); i >= 0 {
		end := bytes.IndexByte(out[i:], '}')
		if end < 0 {
			end = len(out) - i - 1
		}
		return nil, fmt.Errorf("promconfig: unknown placeholder %s left in the template", out[i:i+end+1])
	}
	return out, nil
}
