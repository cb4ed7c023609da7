package compose

import (
	"bytes"
	"fmt"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"unicode"

	"go.yaml.in/yaml/v3"

	"github.com/protobench/protobench/internal/targets"
)

// Files of the compose stack, relative to its folder. ServersFile is generated from the target
// registry (protobench generate) and always goes with MainFile.
const (
	MainFile    = "docker-compose.yml"
	ServersFile = "servers.yml"
)

// ServerUserEnv is the compose variable with the uid:gid the registry's servers run as;
// ServerUID is its default, the user of the server images (images/protobench and
// servers/python-grpc), who must be able to read the TLS key (0600).
const (
	ServerUserEnv = "PROTOBENCH_SERVER_USER"
	ServerUID     = 10001
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
	User       string   // uid:gid or a ${VAR:-default} expression; empty: the image's own
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
		// Set by the runner for every step (none or gzip); unset, the server compresses nothing.
		pass = append(pass, targets.CompressionEnv)
		if t.TLS != nil {
			// Set by the runner for a TLS step only (the certificates it made, mounted at
			// targets.TLSMount); unset, the server serves cleartext.
			pass = append(pass, targets.TLSCertEnv, targets.TLSKeyEnv, targets.TLSALPNEnv)
		}
		out = append(out, ServerService{
			Name:  t.Name,
			Image: fmt.Sprintf("${%s:-protobench/%s:latest}", imageVar(t.Image), t.Image),
			// The runner sets the user who owns the run's TLS key (targets.ServerUID when it runs
			// as root), so that the key can be 0600.
			User:        fmt.Sprintf("${%s:-%d:%d}", ServerUserEnv, ServerUID, ServerUID),
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
// (the text of MainFile). header is its first comment lines, without "# ". Everything in it goes
// through the YAML encoder from typed values, so no name or value a scenario gives can become
// YAML structure; an environment key that is not a variable name is refused all the same.
func RenderServers(main []byte, header []string, services []ServerService) ([]byte, error) {
	for _, s := range services {
		for k := range s.Environment {
			if !validEnvKey(k) {
				return nil, fmt.Errorf("service %s: environment key %q: expected a variable name (a letter or _, then letters, digits or _)", s.Name, k)
			}
		}
	}
	return renderServers(main, header, services)
}

// renderServers is RenderServers without the key check (tests feed it hostile keys).
func renderServers(main []byte, header []string, services []ServerService) ([]byte, error) {
	var b bytes.Buffer
	for _, h := range header {
		b.WriteString(strings.TrimRight("# "+commentLine(h), " ") + "\n")
	}
	blocks, err := topLevelNodes(main)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", MainFile, err)
	}
	for _, name := range sharedBlocks {
		kv, ok := blocks[name]
		if !ok {
			return nil, fmt.Errorf("%s has no top-level %s block, which the server services use", MainFile, name)
		}
		key := *kv[0]
		key.HeadComment = "" // the comment above it in MainFile is about MainFile
		text, err := encodeYAML(mapping(&key, kv[1]))
		if err != nil {
			return nil, err
		}
		b.WriteString("\n")
		b.Write(text)
	}
	b.WriteString("\nservices:\n")
	for i, s := range services {
		if i > 0 {
			b.WriteString("\n")
		}
		text, err := encodeYAML(mapping(str("services"), mapping(str(s.Name), serviceNode(s))))
		if err != nil {
			return nil, err
		}
		// The encoder's own "services:" line opens each service's text; the file has one.
		b.Write(bytes.TrimPrefix(text, []byte("services:\n")))
	}
	return b.Bytes(), nil
}

// serviceNode is one server service: x-server merged in, then its own settings.
func serviceNode(s ServerService) *yaml.Node {
	n := mapping(&yaml.Node{Kind: yaml.ScalarNode, Tag: "!!merge", Value: "<<"}, &yaml.Node{Kind: yaml.AliasNode, Value: "server"},
		str("image"), str(s.Image))
	if s.Caps.CPUs > 0 {
		add(n, "cpus", str("${PROTOBENCH_SERVER_CPUS:-"+strconv.FormatFloat(s.Caps.CPUs, 'f', -1, 64)+"}"))
	}
	if s.Caps.MemoryBytes > 0 {
		add(n, "mem_limit", str("${PROTOBENCH_SERVER_MEM:-"+strconv.FormatInt(s.Caps.MemoryBytes, 10)+"}"))
	}
	if s.User != "" {
		add(n, "user", quoted(s.User))
	}
	if len(s.Entrypoint) > 0 {
		add(n, "entrypoint", flowList(s.Entrypoint))
	}
	if len(s.Environment)+len(s.PassThrough) > 0 {
		env := mapping()
		keys := make([]string, 0, len(s.Environment))
		for k := range s.Environment {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			add(env, k, quoted(escapeDollars(s.Environment[k])))
		}
		for _, k := range s.PassThrough {
			// No value: compose passes the variable through only when it is set.
			add(env, k, &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!null"})
		}
		add(n, "environment", env)
	}
	if len(s.Health) > 0 {
		retries := s.Retries
		if retries <= 0 {
			retries = 60
		}
		add(n, "healthcheck", mapping(str("test"), flowList(append([]string{"CMD"}, s.Health...)),
			str("interval"), str("1s"), str("timeout"), str("2s"),
			str("retries"), &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!int", Value: strconv.Itoa(retries)}))
	}
	return n
}

// envKeyRule is the scenario's rule for environment keys (scenario.ValidEnvKey), kept here too
// because a compose file must never take another key from any caller.
var envKeyRule = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

func validEnvKey(k string) bool { return envKeyRule.MatchString(k) }

// commentLine keeps a header line on its line: a scenario's path may hold a line break.
func commentLine(s string) string {
	return strings.Map(func(r rune) rune {
		if unicode.IsControl(r) {
			return ' '
		}
		return r
	}, s)
}

// escapeDollars keeps compose from interpolating a literal $ in a user's value.
func escapeDollars(s string) string { return strings.ReplaceAll(s, "$", "$$") }

// topLevelNodes parses a YAML file and returns its top-level keys' key and value nodes.
func topLevelNodes(text []byte) (map[string][2]*yaml.Node, error) {
	var doc yaml.Node
	if err := yaml.Unmarshal(text, &doc); err != nil {
		return nil, err
	}
	if doc.Kind != yaml.DocumentNode || len(doc.Content) != 1 || doc.Content[0].Kind != yaml.MappingNode {
		return nil, fmt.Errorf("expected a mapping at the top")
	}
	root := doc.Content[0]
	out := map[string][2]*yaml.Node{}
	for i := 0; i+1 < len(root.Content); i += 2 {
		out[root.Content[i].Value] = [2]*yaml.Node{root.Content[i], root.Content[i+1]}
	}
	return out, nil
}
