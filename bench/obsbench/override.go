package obsbench

import (
	"strings"

	"go.yaml.in/yaml/v3"
)

// The bench starts the stack and its load tool as compose services, through the Compose engine,
// from compose/docker-compose.yml as a run does: images, cpusets, CPU weights, caps, mounts and
// labels all come from there. It adds one compose file of its own (overrides), which compose
// merges over those services, for what differs here and nothing else:
//
//   - the host network (network_mode: host): the server under test is a native process on
//     127.0.0.1, pinned to its core, and the generator reaches it over loopback as it always has
//     here, so figures stay comparable with the earlier ones;
//   - on the host network every port is the host's, so Prometheus, cAdvisor and node-exporter
//     listen on free ports (their compose flags with the address replaced), and Prometheus reads
//     the bench's configuration, whose jobs point at those ports;
//   - cAdvisor's housekeeping interval (--housekeeping) and the stack's CPU weight
//     (--cpu-shares), when the bench is asked to vary them.

// stackAddrs are where the stack's services listen on the host network.
type stackAddrs struct {
	prometheus, cadvisor, nodeExporter string // host:port
}

// overrideService is the part of a compose service the bench changes.
type overrideService struct {
	NetworkMode string   `yaml:"network_mode"`
	Command     []string `yaml:"command,omitempty"`
	Volumes     []string `yaml:"volumes,omitempty"`
	CPUShares   int      `yaml:"cpu_shares,omitempty"`
}

// overrides is the bench's compose file: the stack's services and toolService (the tool's compose
// service) on the host network, the stack's flags and Prometheus' configuration file
// (promConfig, an absolute path) for this bench's addresses, and the --housekeeping and
// --cpu-shares knobs.
func overrides(obs observability, o options, a stackAddrs, promConfig, toolService string) ([]byte, error) {
	_, cadvisorPort, _ := strings.Cut(a.cadvisor, ":")
	services := map[string]overrideService{
		"prometheus": {Command: withFlags(obs.promFlags, map[string]string{
			"--config.file": "/etc/prometheus/prometheus.yml", "--storage.tsdb.path": "/prometheus",
			// Minutes of data: the retention a run sets does not matter.
			"--storage.tsdb.retention.time": "1d", "--web.listen-address": a.prometheus}),
			// compose merges volumes by their path in the container: this replaces the
			// repository's prometheus.yml and keeps the other mounts.
			Volumes: []string{promConfig + ":/etc/prometheus/prometheus.yml:ro"}},
		"cadvisor": {Command: withFlags(obs.cadvisorFlags, map[string]string{
			"--port": cadvisorPort, "--housekeeping_interval": o.housekeeping, "--max_housekeeping_interval": doubled(o.housekeeping)})},
		"node-exporter": {Command: withFlags(obs.nodeFlags, map[string]string{"--web.listen-address": a.nodeExporter})},
		toolService:     {},
	}
	for name, s := range services {
		s.NetworkMode = "host"
		if name != toolService {
			s.CPUShares = o.cpuShares // 0: compose's own weight stays
		}
		services[name] = s
	}
	b, err := yaml.Marshal(map[string]any{"services": services})
	if err != nil {
		return nil, err
	}
	head := "# bench-observability's changes to compose/docker-compose.yml for one run (bench/obsbench/override.go).\n"
	return append([]byte(head), b...), nil
}
