// Package compose drives protobench's stack through the compose CLI, so the compose file stays the
// single description of every container: `docker compose` (v2) where it exists, `docker-compose`
// (v1.29) otherwise. Every method is context-aware, and a dry run prints the exact commands
// instead of running them.
package compose

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"
)

// DefaultProjectName is protobench's compose project: containers, networks and volumes are
// named after it, and cAdvisor's labels carry it.
const DefaultProjectName = "protobench"

// Profiles are the compose file's profiles. Every command enables all of them, so that naming a
// service is enough to start it and `down` removes everything; `up` always names its services.
var Profiles = []string{"servers", "tools", "grafana"}

// Options configures a Client.
type Options struct {
	// Dir holds the compose files; it is the project directory (relative paths in the file are
	// resolved from it). Required.
	Dir string
	// Files are the compose files, relative to Dir; DefaultFiles if empty.
	Files []string
	// Extra are compose files read after Files, absolute or relative to Dir: a run's custom
	// targets (see RenderServers).
	Extra []string
	// ProjectName is DefaultProjectName if empty.
	ProjectName string
	// Env is the interpolation environment every command gets on top of the process
	// environment; per-call env maps go on top of it.
	Env map[string]string
	// DryRun prints commands to Log instead of running those that change anything.
	DryRun bool
	// Log receives dry-run commands; os.Stderr if nil.
	Log io.Writer
	// Command forces the compose command, e.g. {"docker-compose"} or {"docker", "compose"}.
	// Empty: the PROTOBENCH_COMPOSE environment variable ("v1", "v2" or a command), else
	// detection (v2 first).
	Command []string
	// Docker is the docker CLI used for inspect, ps and rm; "docker" if empty.
	Docker string
}

// Client runs compose commands for one project.
type Client struct {
	opts    Options
	files   []string // absolute
	command []string
	version string
	fast    *fastCache // rendered configs of the fast path (fast.go)
}

// New checks that Docker answers (a *DockerUnreachableError otherwise) and finds the compose
// command. In a dry run neither is required: what is missing is logged and the commands shown
// are those of `docker compose`.
func New(ctx context.Context, opts Options) (*Client, error) {
	if opts.Dir == "" {
		return nil, errors.New("compose: Options.Dir is required")
	}
	dir, err := filepath.Abs(opts.Dir)
	if err != nil {
		return nil, err
	}
	opts.Dir = dir
	if len(opts.Files) == 0 {
		opts.Files = DefaultFiles
	}
	if opts.ProjectName == "" {
		opts.ProjectName = DefaultProjectName
	}
	if opts.Log == nil {
		opts.Log = os.Stderr
	}
	if opts.Docker == "" {
		opts.Docker = "docker"
	}
	c := &Client{opts: opts, fast: &fastCache{}}
	for _, f := range append(append([]string{}, opts.Files...), opts.Extra...) {
		if !filepath.IsAbs(f) {
			f = filepath.Join(dir, f)
		}
		if _, err := os.Stat(f); err != nil {
			return nil, fmt.Errorf("compose file: %w", err)
		}
		c.files = append(c.files, f)
	}
	if _, err := CheckDocker(ctx, opts.Docker); err != nil {
		if !opts.DryRun {
			return nil, err
		}
		fmt.Fprintf(opts.Log, "# dry run: %v\n", err)
	}
	if opts.DryRun && len(opts.Command) > 0 {
		// A dry run with a given command shows its commands whether or not it is installed.
		c.command, c.version = opts.Command, "unknown (dry run)"
		return c, nil
	}
	c.command, c.version, err = detect(ctx, opts)
	if err != nil {
		if !opts.DryRun {
			return nil, err
		}
		c.command = []string{opts.Docker, "compose"}
		fmt.Fprintf(opts.Log, "# dry run: %v; showing docker compose commands\n", err)
	}
	return c, nil
}

// detect finds the compose command and its version.
func detect(ctx context.Context, opts Options) ([]string, string, error) {
	candidates := [][]string{{opts.Docker, "compose"}, {"docker-compose"}}
	forced := opts.Command
	if len(forced) == 0 {
		switch v := strings.TrimSpace(os.Getenv("PROTOBENCH_COMPOSE")); v {
		case "":
		case "v2":
			forced = []string{opts.Docker, "compose"}
		case "v1":
			forced = []string{"docker-compose"}
		default:
			forced = strings.Fields(v)
		}
	}
	if len(forced) > 0 {
		candidates = [][]string{forced}
	}
	var tried []string
	for _, cand := range candidates {
		ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		out, err := exec.CommandContext(ctx, cand[0], append(cand[1:], "version", "--short")...).Output()
		cancel()
		tried = append(tried, strings.Join(cand, " "))
		if err == nil {
			return cand, strings.TrimPrefix(strings.TrimSpace(string(out)), "v"), nil
		}
	}
	return nil, "", fmt.Errorf("no compose command works (tried %s): install the Docker Compose plugin (v2) or docker-compose 1.29", strings.Join(tried, ", "))
}

// Command is the compose command in use, e.g. [docker compose].
func (c *Client) Command() []string { return append([]string(nil), c.command...) }

// Version is the compose version without a leading "v" (e.g. 2.40.3 or 1.29.2).
func (c *Client) Version() string { return c.version }

// Kind is "v2" or "v1".
func (c *Client) Kind() string {
	if strings.HasPrefix(c.version, "1.") {
		return "v1"
	}
	return "v2"
}

// ProjectName is the compose project name.
func (c *Client) ProjectName() string { return c.opts.ProjectName }
