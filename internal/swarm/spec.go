package swarm

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/protobench/protobench/internal/compose"
)

// Service modes.
const (
	ModeReplicated = "replicated" // one task: a server, Prometheus, a tool run once (WrapJob)
	ModeGlobal     = "global"     // one task per node (cAdvisor, node-exporter)
)

// ServiceSpec is one `docker service create`.
type ServiceSpec struct {
	Name            string
	Image           string
	Mode            string   // ModeReplicated when empty
	Entrypoint      []string // replaces the image's entrypoint when set
	Args            []string // the command (after the entrypoint)
	Env             map[string]string
	Labels          map[string]string // on the service (what dockerswarm_sd reads)
	ContainerLabels map[string]string // on every task's container (what cAdvisor reads)
	Constraints     []string
	Network         string
	Alias           string // the name tasks are found by on Network
	DNSRR           bool   // --endpoint-mode dnsrr: the alias resolves to the task, no IPVS VIP
	CPUs            string // --limit-cpu
	Memory          string // --limit-memory
	Ulimits         map[string][2]int64
	User            string
	Mounts          []Mount
	Configs         []ConfigMount
	Secrets         []SecretMount
	PublishHost     []PortMap // published in host mode on the task's node
	// RestartNone makes a task that exits stay exited: a crashed server must fail its run,
	// not be restarted behind the measurement's back.
	RestartNone bool
	StopGrace   time.Duration
	// NoHealthcheck turns off a health check the image may declare: the runner probes the
	// server itself before the run, and a probe during it would count as server CPU.
	NoHealthcheck bool
	// LogDriver and LogOpts set the tasks' log driver instead of the daemon's default (and its
	// default options, which dockerd merges in only for its own default driver).
	LogDriver string
	LogOpts   map[string]string
}

// Mount is a bind mount (Source is a path on the task's node) or a tmpfs (Source empty).
type Mount struct {
	Source, Target string
	ReadOnly       bool
}

// ConfigMount puts a swarm config at Target in the task's container.
type ConfigMount struct {
	Config, Target string
	UID, GID       string // owner inside the container; root when empty
}

// SecretMount puts a swarm secret at Target in the task's container. Unlike a config, a secret
// is stored encrypted in the swarm's log, `docker secret inspect` never prints it, and a node
// holds it only in memory (a tmpfs in the task) while a task that uses it runs there.
type SecretMount struct {
	Secret, Target string
	// Mode is the file's mode; 0400 when zero. UID and GID own it; root when empty.
	Mode     os.FileMode
	UID, GID string
}

// PortMap publishes a container port on the node's own address (mode=host, no routing mesh).
type PortMap struct{ Published, Target int }

// CreateArgs is the docker CLI command line (without the docker program) that creates s, detached
// and quiet (it prints the service ID).
func (s ServiceSpec) CreateArgs() []string {
	args := []string{"service", "create", "--detach", "--quiet", "--name", s.Name,
		// Local images have no registry digest to pin; without this each create warns and
		// asks a registry that is not there.
		"--no-resolve-image"}
	args = append(args, s.modeArgs()...)
	args = append(args, s.labelArgs()...)
	args = append(args, s.placementArgs()...)
	args = append(args, s.resourceArgs()...)
	args = append(args, s.fileArgs()...)
	for _, p := range s.PublishHost {
		args = append(args, "--publish", fmt.Sprintf("mode=host,target=%d,published=%d", p.Target, p.Published))
	}
	args = append(args, s.lifecycleArgs()...)
	if len(s.Entrypoint) > 0 {
		// The CLI splits --entrypoint like a shell would.
		args = append(args, "--entrypoint", shellJoin(s.Entrypoint))
	}
	args = append(args, s.Image)
	return append(args, s.Args...)
}

// modeArgs: one replica unless the service is global.
func (s ServiceSpec) modeArgs() []string {
	mode := s.Mode
	if mode == "" {
		mode = ModeReplicated
	}
	args := []string{"--mode", mode}
	if mode == ModeReplicated {
		args = append(args, "--replicas", "1")
	}
	return args
}

// labelArgs are the service's and its containers' labels and the environment, sorted so the
// command line is the same every time.
func (s ServiceSpec) labelArgs() []string {
	var args []string
	for _, kv := range sortedPairs(s.Labels) {
		args = append(args, "--label", kv)
	}
	for _, kv := range sortedPairs(s.ContainerLabels) {
		args = append(args, "--container-label", kv)
	}
	for _, kv := range sortedPairs(s.Env) {
		args = append(args, "--env", kv)
	}
	return args
}

// placementArgs say where the task runs and how it is found: node constraints, network, alias.
func (s ServiceSpec) placementArgs() []string {
	var args []string
	for _, c := range s.Constraints {
		args = append(args, "--constraint", c)
	}
	if s.Network != "" {
		n := "name=" + s.Network
		if s.Alias != "" {
			n += ",alias=" + s.Alias
		}
		args = append(args, "--network", n)
	}
	if s.DNSRR {
		args = append(args, "--endpoint-mode", "dnsrr")
	}
	return args
}

// resourceArgs are the task's limits and the user it runs as.
func (s ServiceSpec) resourceArgs() []string {
	var args []string
	if s.CPUs != "" {
		args = append(args, "--limit-cpu", s.CPUs)
	}
	if s.Memory != "" {
		args = append(args, "--limit-memory", s.Memory)
	}
	args = append(args, compose.UlimitArgs(s.Ulimits)...)
	if s.User != "" {
		args = append(args, "--user", s.User)
	}
	return args
}

// fileArgs put mounts, configs and secrets into the task's container.
func (s ServiceSpec) fileArgs() []string {
	var args []string
	for _, m := range s.Mounts {
		args = append(args, "--mount", m.flag())
	}
	for _, c := range s.Configs {
		args = append(args, "--config", c.flag())
	}
	for _, sm := range s.Secrets {
		args = append(args, "--secret", sm.flag())
	}
	return args
}

// lifecycleArgs govern restarts, stopping, health checks and logs.
func (s ServiceSpec) lifecycleArgs() []string {
	var args []string
	if s.RestartNone {
		args = append(args, "--restart-condition", "none")
	}
	if s.StopGrace > 0 {
		args = append(args, "--stop-grace-period", s.StopGrace.String())
	}
	if s.NoHealthcheck {
		args = append(args, "--no-healthcheck")
	}
	if s.LogDriver != "" {
		args = append(args, "--log-driver", s.LogDriver)
	}
	for _, kv := range sortedPairs(s.LogOpts) {
		args = append(args, "--log-opt", kv)
	}
	return args
}

// flag is the mount's --mount value.
func (m Mount) flag() string {
	if m.Source == "" {
		return "type=tmpfs,destination=" + m.Target
	}
	v := "type=bind,source=" + m.Source + ",destination=" + m.Target
	if m.ReadOnly {
		v += ",readonly"
	}
	return v
}

// flag is the config's --config value.
func (c ConfigMount) flag() string {
	v := "source=" + c.Config + ",target=" + c.Target + ",mode=0444"
	if c.UID != "" {
		v += ",uid=" + c.UID
	}
	if c.GID != "" {
		v += ",gid=" + c.GID
	}
	return v
}

// flag is the secret's --secret value.
func (sm SecretMount) flag() string {
	mode := sm.Mode
	if mode == 0 {
		mode = 0o400
	}
	v := fmt.Sprintf("source=%s,target=%s,mode=%#o", sm.Secret, sm.Target, uint32(mode))
	if sm.UID != "" {
		v += ",uid=" + sm.UID
	}
	if sm.GID != "" {
		v += ",gid=" + sm.GID
	}
	return v
}

// FromCompose are the choices that turn a compose service into a swarm service.
type FromCompose struct {
	Name    string            // the swarm service's name
	Project string            // the compose project its containers claim (com.docker.compose.project)
	Env     map[string]string // fills the per-run placeholders of the rendered service (step labels) and pass-through variables
	Network string
	Mode    string
	// Role, when set, constrains the tasks to nodes labelled protobench.role=Role.
	Role string
	// Scrape and ScrapePort label the service for Prometheus' dockerswarm_sd
	// (protobench.scrape=<job>, protobench.scrape.port=<port>).
	Scrape     string
	ScrapePort int
	// DropMount says a bind mount of the compose service has no place on a swarm node (a
	// folder of this checkout, the results folder) and is left out.
	DropMount func(source, target string) bool
	Images    map[string]string // image reference -> the reference the nodes pull (a registry's)
}

// Translate turns a compose service, as `compose config` renders it, into a swarm service: the
// same image, command, environment, labels (on the containers, plus the compose project and
// service labels cAdvisor's series are matched by), caps and mounts. There is no cpuset in
// swarm; compose's cpuset is dropped, and the records say so.
func Translate(s *compose.Service, o FromCompose) ServiceSpec {
	spec := ServiceSpec{
		Name: o.Name, Image: s.Image, Mode: o.Mode, Network: o.Network, Alias: s.Name,
		CPUs: s.CPUs, Memory: s.Memory, User: s.User,
		Entrypoint: s.Entrypoint, Args: s.Command,
		Labels:          map[string]string{},
		ContainerLabels: map[string]string{},
		Env:             map[string]string{},
	}
	if ref, ok := o.Images[s.Image]; ok {
		spec.Image = ref
	}
	if len(s.Ulimits) > 0 {
		spec.Ulimits = s.Ulimits
	}
	if o.Project != "" {
		spec.ContainerLabels["com.docker.compose.project"] = o.Project
	}
	spec.ContainerLabels["com.docker.compose.service"] = s.Name
	for k, v := range s.Labels {
		spec.ContainerLabels[k] = compose.Fill(v, o.Env)
	}
	for k, v := range s.Environment {
		if v != nil {
			spec.Env[k] = compose.Fill(*v, o.Env)
		} else if pv, ok := o.Env[k]; ok {
			// compose passes a variable listed without a value through from its environment.
			spec.Env[k] = pv
		}
	}
	if o.Role != "" {
		spec.Constraints = append(spec.Constraints, "node.labels."+RoleLabel+"=="+o.Role)
	}
	if o.Scrape != "" {
		spec.Labels["protobench.scrape"] = o.Scrape
		spec.Labels["protobench.scrape.port"] = fmt.Sprint(o.ScrapePort)
	}
	for _, v := range s.Volumes {
		src, dst, ro := splitVolume(v)
		if !filepath.IsAbs(src) {
			// A named volume: swarm would make one per node, unlabelled, which the cleanup
			// could not find. The services that use one (Prometheus' storage) keep their data
			// in the container instead.
			continue
		}
		if o.DropMount != nil && o.DropMount(src, dst) {
			continue
		}
		spec.Mounts = append(spec.Mounts, Mount{Source: src, Target: dst, ReadOnly: ro})
	}
	if s.StopGrace != "" {
		if d, err := time.ParseDuration(s.StopGrace); err == nil {
			spec.StopGrace = d
		}
	}
	return spec
}

// splitVolume reads compose's "source:target[:mode]".
func splitVolume(v string) (src, dst string, readOnly bool) {
	parts := strings.Split(v, ":")
	switch len(parts) {
	case 1:
		return "", parts[0], false
	case 2:
		return parts[0], parts[1], false
	}
	mode := parts[len(parts)-1]
	return strings.Join(parts[:len(parts)-2], ":"), parts[len(parts)-2], strings.Contains(","+mode+",", ",ro,")
}

func sortedPairs(m map[string]string) []string {
	out := make([]string, 0, len(m))
	for k, v := range m {
		out = append(out, k+"="+v)
	}
	sort.Strings(out)
	return out
}

// shellJoin quotes words so that a shell-like split gives them back.
func shellJoin(words []string) string {
	out := make([]string, len(words))
	for i, w := range words {
		if w != "" && strings.IndexFunc(w, func(r rune) bool {
			return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("-_./=:,@%+", r))
		}) < 0 {
			out[i] = w
			continue
		}
		out[i] = "'" + strings.ReplaceAll(w, "'", `'"'"'`) + "'"
	}
	return strings.Join(out, " ")
}
