package swarm

import (
	"bytes"
	"context"
	"fmt"
	"os/exec"
	"strconv"
	"strings"
	"time"
)

// CreateConfig stores data as a swarm config named <project>-<name>-<n>, labelled with the
// project, and returns its name. Configs are immutable, so every call makes a new one; swarm
// allows 64 characters in a name, so a long name is cut.
func (c *Client) CreateConfig(ctx context.Context, name string, data []byte) (string, error) {
	if len(data) > maxConfigBytes {
		return "", fmt.Errorf("config %s: %d bytes is more than a swarm config holds (%d)", name, len(data), maxConfigBytes)
	}
	full := c.configName(name, strconv.FormatInt(time.Now().UnixNano(), 36))
	cmd := exec.CommandContext(ctx, c.Docker, c.configCreateArgs(full)...)
	cmd.Stdin = bytes.NewReader(data)
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("docker config create %s: %v: %s", full, err, firstLine(errOut.String()))
	}
	return full, nil
}

// configName is the project's config name for name, made unique by suffix and cut to the 64
// characters swarm allows.
func (c *Client) configName(name, suffix string) string {
	suffix = "-" + suffix
	full := c.Project + "-" + sanitize(name)
	if len(full) > 64-len(suffix) {
		full = full[:64-len(suffix)]
	}
	return full + suffix
}

func (c *Client) configCreateArgs(full string) []string {
	return []string{"config", "create", "--label", ProjectLabel + "=" + c.Project, full, "-"}
}

// CreateSecret stores data as a swarm secret, named and labelled as CreateConfig names a
// config, and returns its name: for what must not be printed by `docker config inspect`, such
// as a TLS key. RemoveAll removes it with the project's other objects.
func (c *Client) CreateSecret(ctx context.Context, name string, data []byte) (string, error) {
	if len(data) > maxConfigBytes {
		return "", fmt.Errorf("secret %s: %d bytes is more than a swarm secret holds (%d)", name, len(data), maxConfigBytes)
	}
	full := c.configName(name, strconv.FormatInt(time.Now().UnixNano(), 36))
	cmd := exec.CommandContext(ctx, c.Docker, "secret", "create", "--label", ProjectLabel+"="+c.Project, full, "-")
	cmd.Stdin = bytes.NewReader(data)
	var errOut bytes.Buffer
	cmd.Stderr = &errOut
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("docker secret create %s: %v: %s", full, err, firstLine(errOut.String()))
	}
	return full, nil
}

// maxConfigBytes is swarm's limit on one config, and on one secret (500 KiB).
const maxConfigBytes = 500 * 1024

// RemoveConfigs removes configs by name; missing ones are no error.
func (c *Client) RemoveConfigs(ctx context.Context, names ...string) error {
	if len(names) == 0 {
		return nil
	}
	out, err := c.run(ctx, append([]string{"config", "rm"}, names...)...)
	if err != nil && !strings.Contains(out+err.Error(), "not found") {
		return err
	}
	return nil
}
