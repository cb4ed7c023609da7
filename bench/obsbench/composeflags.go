package obsbench

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"go.yaml.in/yaml/v3"
)

// observability is what the benchmark reads from the compose files to change it for the host
// network (overrides): Prometheus', cAdvisor's and node-exporter's command lines, whose ports it
// moves, and Prometheus' scrape settings per job, whose targets it points at its own processes.
// Everything else (images, cpusets, CPU weights, mounts, labels) compose itself takes from there.
type observability struct {
	promFlags, cadvisorFlags, nodeFlags []string
	scrape                              scrapeSettings
}

// scrapeSettings are compose/prometheus/prometheus.yml's global interval and each job's own
// settings where it has them.
type scrapeSettings struct {
	Global struct {
		Interval string `yaml:"scrape_interval"`
	} `yaml:"global"`
	Jobs []scrapeJob `yaml:"scrape_configs"`
}

type scrapeJob struct {
	Name            string `yaml:"job_name"`
	Interval        string `yaml:"scrape_interval"`
	Timeout         string `yaml:"scrape_timeout"`
	HonorLabels     bool   `yaml:"honor_labels"`
	HonorTimestamps *bool  `yaml:"honor_timestamps"`
}

func readObservability(root string) (observability, error) {
	var o observability
	path := filepath.Join(root, "compose", "docker-compose.yml")
	b, err := os.ReadFile(path)
	if err != nil {
		return o, err
	}
	var file struct {
		Services map[string]struct {
			Command []string `yaml:"command"`
		} `yaml:"services"`
	}
	if err := yaml.Unmarshal(b, &file); err != nil {
		return o, fmt.Errorf("%s: %w", path, err)
	}
	o.promFlags = file.Services["prometheus"].Command
	o.cadvisorFlags, o.nodeFlags = file.Services["cadvisor"].Command, file.Services["node-exporter"].Command
	if len(o.promFlags) == 0 || len(o.cadvisorFlags) == 0 || len(o.nodeFlags) == 0 {
		return o, fmt.Errorf("%s: services.prometheus.command, services.cadvisor.command and services.node-exporter.command must be lists of flags", path)
	}
	promPath := filepath.Join(root, "compose", "prometheus", "prometheus.yml")
	if b, err = os.ReadFile(promPath); err != nil {
		return o, err
	}
	if err := yaml.Unmarshal(b, &o.scrape); err != nil {
		return o, fmt.Errorf("%s: %w", promPath, err)
	}
	if o.scrape.Global.Interval == "" {
		return o, fmt.Errorf("%s: global.scrape_interval is missing", promPath)
	}
	return o, nil
}

// prometheusConfig is compose's Prometheus configuration with the benchmark's own addresses for
// its jobs (the stack runs on the host network here). interval, when set, replaces the global
// scrape interval; jobs with an interval of their own keep it. A job the benchmark has no
// address for is an error, so a new job in compose cannot go unmeasured.
func (s scrapeSettings) prometheusConfig(interval string, targets map[string]string, labels map[string]map[string]string) (string, error) {
	if interval == "" {
		interval = s.Global.Interval
	}
	type staticConfig struct {
		Targets []string          `yaml:"targets"`
		Labels  map[string]string `yaml:"labels,omitempty"`
	}
	type job struct {
		Name            string         `yaml:"job_name"`
		Interval        string         `yaml:"scrape_interval,omitempty"`
		Timeout         string         `yaml:"scrape_timeout,omitempty"`
		HonorLabels     bool           `yaml:"honor_labels,omitempty"`
		HonorTimestamps *bool          `yaml:"honor_timestamps,omitempty"`
		Static          []staticConfig `yaml:"static_configs"`
	}
	var cfg struct {
		Global struct {
			Interval   string `yaml:"scrape_interval"`
			Timeout    string `yaml:"scrape_timeout"`
			Evaluation string `yaml:"evaluation_interval"`
		} `yaml:"global"`
		Jobs []job `yaml:"scrape_configs"`
	}
	cfg.Global.Interval, cfg.Global.Timeout, cfg.Global.Evaluation = interval, interval, interval
	for _, j := range s.Jobs {
		addr, ok := targets[j.Name]
		if !ok {
			return "", fmt.Errorf("compose/prometheus/prometheus.yml: job %q has no counterpart in bench-observability", j.Name)
		}
		cfg.Jobs = append(cfg.Jobs, job{Name: j.Name, Interval: j.Interval, Timeout: j.Timeout, HonorLabels: j.HonorLabels,
			HonorTimestamps: j.HonorTimestamps, Static: []staticConfig{{Targets: []string{addr}, Labels: labels[j.Name]}}})
	}
	b, err := yaml.Marshal(&cfg)
	return string(b), err
}

// withFlags returns flags with every --name=value of set replacing the compose file's value of
// the same name, and the names compose does not have appended.
func withFlags(flags []string, set map[string]string) []string {
	out := make([]string, 0, len(flags)+len(set))
	done := map[string]bool{}
	for _, f := range flags {
		name, _, _ := strings.Cut(f, "=")
		if v, ok := set[name]; ok {
			out = append(out, name+"="+v)
			done[name] = true
			continue
		}
		out = append(out, f)
	}
	for _, name := range sortedKeys(set) {
		if !done[name] {
			out = append(out, name+"="+set[name])
		}
	}
	return out
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
