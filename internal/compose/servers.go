package compose

import (
	"bytes"
	"fmt"
	"sort"
	"strconv"
	"strings"

	"github.com/protobench/protobench/internal/targets"
)

// Files of the compose stack, relative to its folder. ServersFile is generated from the target
// registry (protobench generate) and always goes with MainFile.
const (
	MainFile    = "docker-compose.yml"
	ServersFile = "servers.yml"
)

// DefaultFiles are the compose files every command reads unless Options.Files says otherwise.
var DefaultFiles = []string{MainFile, ServersFile}

// sharedBlocks are the top-level blocks of MainFile a server service builds on: the settings
// every server shares (caps, cpuset, ulimits, labels) stay hand-written there, in one place, and
// each servers file carries a copy because YAML anchors do not reach across files.
var sharedBlocks = []string{"x-step-labels", "x-server"}

// ServerService is one server container of the compose stack.
type ServerService struct {
	Name       string
	Image      string   // an image reference, or a ${VAR:-default} expression
	Entrypoint []string // nil: the image's own
	// Environment is set as given; PassThrough variables are passed only when set (knobs), so an
	// unset one keeps the server's default.
	Environment map[string]string
	PassThrough []string
	Health      []string // healthcheck command (CMD form); nil: none (running counts as started)
	Retries     int
	// Caps are the defaults of PROTOBENCH_SERVER_CPUS and _MEM for this server, which the runner
	// always sets; zero keeps x-server's.
	Caps targets.Caps
}

// RegistryServices are the services of every registry target, in registry order. A target's
// image variable is its image's (the protobench image's is PROTOBENCH_SERVER_IMAGE).
func RegistryServices(imageVar func(image string) string) []ServerService {
	var out []ServerService
	for _, t := range targets.All() {
		env := map[string]string{
			"PROTOBENCH_LISTEN":         fmt.Sprintf(":%d", t.Port),
			"PROTOBENCH_METRICS_LISTEN": fmt.Sprintf(":%d", t.MetricsPort),
		}
		for _, l := range t.Listeners {
			env[l.Env] = fmt.Sprintf(":%d", l.Port)
		}
		var pass []string
		for _, k := range t.KnobNames() {
			if !t.Knobs[k].Client { // a client knob goes to the tool, not the server
				pass = append(pass, t.Knobs[k].Env)
			}
		}
		if t.TLS != nil {
			// Set by the runner for a TLS step only (the certificates it made, mounted at
			// targets.TLSMount); unset, the server serves cleartext.
			pass = append(pass, targets.TLSCertEnv, targets.TLSKeyEnv, targets.TLSALPNEnv)
		}
		out = append(out, ServerService{
			Name:        t.Name,
			Image:       fmt.Sprintf("${%s:-protobench/%s:latest}", imageVar(t.Image), t.Image),
			Entrypoint:  t.Entrypoint,
			Environment: env,
			PassThrough: pass,
			Health:      t.Health,
			Retries:     t.HealthRetries,
			Caps:        t.Caps,
		})
	}
	return out
}

// RenderServers writes a compose file of server services on top of the shared blocks of main
// (the text of MainFile). header is its first comment lines, without "# ".
func RenderServers(main []byte, header []string, services []ServerService) ([]byte, error) {
	var b bytes.Buffer
	for _, h := range header {
		b.WriteString(strings.TrimRight("# "+h, " ") + "\n")
	}
	blocks := topLevelBlocks(main)
	for _, name := range sharedBlocks {
		text, ok := blocks[name]
		if !ok {
			return nil, fmt.Errorf("%s has no top-level %s block, which the server services use", MainFile, name)
		}
		b.WriteString("\n" + text)
	}
	b.WriteString("\nservices:\n")
	for i, s := range services {
		if i > 0 {
			b.WriteString("\n")
		}
		fmt.Fprintf(&b, "  %s:\n    <<: *server\n    image: %s\n", s.Name, s.Image)
		if s.Caps.CPUs > 0 {
			fmt.Fprintf(&b, "    cpus: ${PROTOBENCH_SERVER_CPUS:-%s}\n", strconv.FormatFloat(s.Caps.CPUs, 'f', -1, 64))
		}
		if s.Caps.MemoryBytes > 0 {
			fmt.Fprintf(&b, "    mem_limit: ${PROTOBENCH_SERVER_MEM:-%d}\n", s.Caps.MemoryBytes)
		}
		if len(s.Entrypoint) > 0 {
			fmt.Fprintf(&b, "    entrypoint: %s\n", flowList(s.Entrypoint))
		}
		if len(s.Environment)+len(s.PassThrough) > 0 {
			b.WriteString("    environment:\n")
			keys := make([]string, 0, len(s.Environment))
			for k := range s.Environment {
				keys = append(keys, k)
			}
			sort.Strings(keys)
			for _, k := range keys {
				fmt.Fprintf(&b, "      %s: %s\n", k, strconv.Quote(escapeDollars(s.Environment[k])))
			}
			for _, k := range s.PassThrough {
				fmt.Fprintf(&b, "      %s:\n", k)
			}
		}
		if len(s.Health) > 0 {
			retries := s.Retries
			if retries <= 0 {
				retries = 60
			}
			fmt.Fprintf(&b, "    healthcheck:\n      test: %s\n      interval: 1s\n      timeout: 2s\n      retries: %d\n",
				flowList(append([]string{"CMD"}, s.Health...)), retries)
		}
	}
	return b.Bytes(), nil
}

// flowList is a YAML flow sequence of double-quoted strings (JSON strings are valid YAML).
func flowList(xs []string) string {
	q := make([]string, len(xs))
	for i, x := range xs {
		q[i] = strconv.Quote(escapeDollars(x))
	}
	return "[" + strings.Join(q, ", ") + "]"
}

// escapeDollars keeps compose from interpolating a literal $ in a user's value.
func escapeDollars(s string) string { return strings.ReplaceAll(s, "$", "$$") }

// topLevelBlocks splits a YAML file's text into its top-level keys' blocks (the key line and
// every indented, blank or comment line after it), keyed by name.
func topLevelBlocks(text []byte) map[string]string {
	blocks := map[string]string{}
	var name string
	var cur []string
	flush := func() {
		if name != "" {
			// Trailing blank and comment lines belong to whatever comes next.
			for len(cur) > 0 {
				last := strings.TrimSpace(cur[len(cur)-1])
				if last != "" && !strings.HasPrefix(last, "#") {
					break
				}
				cur = cur[:len(cur)-1]
			}
			blocks[name] = strings.Join(cur, "\n") + "\n"
		}
		name, cur = "", nil
	}
	for _, line := range strings.Split(string(text), "\n") {
		top := line != "" && line[0] != ' ' && line[0] != '#' && line[0] != '\t'
		if top {
			flush()
			if k, _, ok := strings.Cut(line, ":"); ok {
				name = k
			}
		}
		if name != "" {
			cur = append(cur, line)
		}
	}
	flush()
	return blocks
}
