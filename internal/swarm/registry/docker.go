package registry

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os/exec"
	"strings"
)

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
