package compose

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"

	"github.com/protobench/protobench/internal/prom/promtest"
	"github.com/protobench/protobench/internal/targets"
)

// The compose folder's configuration is checked statically here because Grafana cannot run on
// the build machines: its provisioning must still be right for the machines where it can.

func readYAML(t *testing.T, rel string, into any) {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("..", "..", "compose", filepath.FromSlash(rel)))
	if err != nil {
		t.Fatal(err)
	}
	if err := yaml.Unmarshal(data, into); err != nil {
		t.Fatalf("%s: %v", rel, err)
	}
}

func TestGrafanaProvisioning(t *testing.T) {
	var ds struct {
		Datasources []struct {
			UID      string         `yaml:"uid"`
			Type     string         `yaml:"type"`
			URL      string         `yaml:"url"`
			JSONData map[string]any `yaml:"jsonData"`
		} `yaml:"datasources"`
	}
	readYAML(t, "grafana/provisioning/datasources/prometheus.yml", &ds)
	if len(ds.Datasources) != 1 {
		t.Fatalf("%d datasources, want 1", len(ds.Datasources))
	}
	d := ds.Datasources[0]
	checks := []struct{ name, got, want string }{
		{"uid", d.UID, "protobench-prometheus"},
		{"type", d.Type, "prometheus"},
		{"url", d.URL, "http://prometheus:9090"},
		{"jsonData.timeInterval", stringOf(d.JSONData["timeInterval"]), "1s"},
	}
	for _, c := range checks {
		if c.got != c.want {
			t.Errorf("datasource %s = %q, want %q", c.name, c.got, c.want)
		}
	}

	var dash struct {
		Providers []struct {
			Type    string            `yaml:"type"`
			Options map[string]string `yaml:"options"`
		} `yaml:"providers"`
	}
	readYAML(t, "grafana/provisioning/dashboards/protobench.yml", &dash)
	if len(dash.Providers) != 1 || dash.Providers[0].Type != "file" || dash.Providers[0].Options["path"] != "/var/lib/grafana/dashboards" {
		t.Fatalf("dashboard providers %+v, want one file provider reading /var/lib/grafana/dashboards", dash.Providers)
	}
}

func stringOf(v any) string {
	s, _ := v.(string)
	return s
}

// composeFile is the part of docker-compose.yml the checks below read.
type composeFile struct {
	Services map[string]struct {
		Image       string            `yaml:"image"`
		Profiles    []string          `yaml:"profiles"`
		Ports       []string          `yaml:"ports"`
		Volumes     []string          `yaml:"volumes"`
		Privileged  bool              `yaml:"privileged"`
		CPUs        any               `yaml:"cpus"`
		CPUSet      string            `yaml:"cpuset"`
		MemLimit    any               `yaml:"mem_limit"`
		Entrypoint  []string          `yaml:"entrypoint"`
		Command     []string          `yaml:"command"`
		Healthcheck map[string]any    `yaml:"healthcheck"`
		Environment map[string]string `yaml:"environment"`
	} `yaml:"services"`
}

func TestComposeFileRules(t *testing.T) {
	var f, sf composeFile
	readYAML(t, MainFile, &f)
	readYAML(t, ServersFile, &sf)
	for name, s := range sf.Services {
		if _, dup := f.Services[name]; dup {
			t.Errorf("service %s is in both %s and %s", name, MainFile, ServersFile)
		}
		f.Services[name] = s
	}
	servers := targets.Names()
	tools := []string{"loadgen", "ghz", "wrk", "k6"}
	observability := []string{"prometheus", "cadvisor", "node-exporter", "grafana"}
	for _, name := range append(append(append([]string(nil), servers...), tools...), observability...) {
		if _, ok := f.Services[name]; !ok {
			t.Errorf("service %s missing", name)
		}
	}
	for name, s := range f.Services {
		if s.Privileged {
			t.Errorf("%s is privileged (cannot start on the build machines)", name)
		}
		for _, p := range s.Ports {
			if !strings.HasPrefix(p, "127.0.0.1:") {
				t.Errorf("%s publishes %q beyond 127.0.0.1", name, p)
			}
		}
		if len(s.Ports) > 0 && name != "prometheus" && name != "grafana" {
			t.Errorf("%s publishes a port: traffic must stay on the compose network", name)
		}
	}
	for _, name := range servers {
		s := f.Services[name]
		if !contains(s.Profiles, "servers") {
			t.Errorf("%s is not in profile servers", name)
		}
		if s.CPUs != "${PROTOBENCH_SERVER_CPUS:-1}" || s.CPUSet != "${PROTOBENCH_SERVER_CPUSET:-}" {
			t.Errorf("%s caps: cpus %v cpuset %q", name, s.CPUs, s.CPUSet)
		}
		test, _ := s.Healthcheck["test"].([]any)
		if len(test) == 0 || test[len(test)-1] != "--probe" || s.Healthcheck["interval"] != "1s" {
			t.Errorf("%s healthcheck %v: want --probe every 1s", name, s.Healthcheck)
		}
	}
	for _, name := range tools {
		s := f.Services[name]
		if !contains(s.Profiles, "tools") || s.CPUSet != "${PROTOBENCH_CLIENT_CPUSET:-}" {
			t.Errorf("%s: profiles %v cpuset %q", name, s.Profiles, s.CPUSet)
		}
		if len(s.Entrypoint) != 1 {
			t.Errorf("%s entrypoint %v: want the tool itself, so runs pass only its arguments", name, s.Entrypoint)
		}
		if !containsPrefix(s.Volumes, "${PROTOBENCH_RAW_DIR:-") {
			t.Errorf("%s does not mount the raw folder", name)
		}
	}
	for _, name := range observability {
		if f.Services[name].CPUSet != "${PROTOBENCH_OBS_CPUSET:-}" {
			t.Errorf("%s is not on PROTOBENCH_OBS_CPUSET", name)
		}
	}
	// Tests stand in for this Prometheus with promtest.StackFlags.
	for _, flag := range promtest.StackFlags {
		if !contains(f.Services["prometheus"].Command, flag) {
			t.Errorf("prometheus command %v lacks %s (promtest.StackFlags)", f.Services["prometheus"].Command, flag)
		}
	}
	if !containsPrefix(f.Services["grafana"].Volumes, "../dashboards:/var/lib/grafana/dashboards") {
		t.Error("grafana does not mount ../dashboards where the provider reads")
	}
}

func TestPrometheusConfig(t *testing.T) {
	var cfg struct {
		Global struct {
			ScrapeInterval string `yaml:"scrape_interval"`
		} `yaml:"global"`
		ScrapeConfigs []struct {
			JobName       string `yaml:"job_name"`
			HonorLabels   bool   `yaml:"honor_labels"`
			StaticConfigs []struct {
				Targets []string `yaml:"targets"`
			} `yaml:"static_configs"`
			FileSDConfigs []struct {
				Files []string `yaml:"files"`
			} `yaml:"file_sd_configs"`
			RelabelConfigs []struct {
				TargetLabel string `yaml:"target_label"`
			} `yaml:"relabel_configs"`
		} `yaml:"scrape_configs"`
	}
	readYAML(t, "prometheus/prometheus.yml", &cfg)
	if cfg.Global.ScrapeInterval != "1s" {
		t.Errorf("scrape_interval %q, want 1s", cfg.Global.ScrapeInterval)
	}
	jobTargets := map[string][]string{}
	var fileSD []string
	for _, sc := range cfg.ScrapeConfigs {
		for _, st := range sc.StaticConfigs {
			jobTargets[sc.JobName] = append(jobTargets[sc.JobName], st.Targets...)
		}
		for _, fs := range sc.FileSDConfigs {
			if sc.JobName == "servers" {
				fileSD = append(fileSD, fs.Files...)
			}
		}
		switch sc.JobName {
		case "servers":
			if len(sc.RelabelConfigs) == 0 || sc.RelabelConfigs[0].TargetLabel != "target" {
				t.Error("servers job does not set the target label")
			}
		case "loadgen":
			if !sc.HonorLabels {
				t.Error("loadgen job must honor the generator's own target label")
			}
		}
	}
	want := map[string][]string{
		"cadvisor":      {"cadvisor:8080"},
		"node-exporter": {"node-exporter:9100"},
		"prometheus":    {"localhost:9090"},
		"loadgen":       {"protobench-loadgen:9102"},
	}
	for job, w := range want {
		if strings.Join(jobTargets[job], ",") != strings.Join(w, ",") {
			t.Errorf("job %s targets %v, want %v", job, jobTargets[job], w)
		}
	}
	// The servers job reads the mounted targets folder, where the registry's list is generated.
	if strings.Join(fileSD, ",") != "/etc/prometheus/targets/*.yml" {
		t.Errorf("servers job file_sd %v, want /etc/prometheus/targets/*.yml", fileSD)
	}
	var groups []struct {
		Targets []string `yaml:"targets"`
	}
	readYAML(t, "prometheus/targets/servers.yml", &groups)
	var got []string
	for _, g := range groups {
		got = append(got, g.Targets...)
	}
	var wantServers []string
	for _, tg := range targets.All() {
		wantServers = append(wantServers, fmt.Sprintf("%s:%d", tg.Name, tg.MetricsPort))
	}
	if strings.Join(got, ",") != strings.Join(wantServers, ",") {
		t.Errorf("server scrape targets %v, want %v", got, wantServers)
	}
	if !containsPrefix(mainVolumes(t, "prometheus"), "./prometheus/targets:/etc/prometheus/targets") {
		t.Error("prometheus does not mount ./prometheus/targets where the servers job reads")
	}
}

func mainVolumes(t *testing.T, service string) []string {
	var f composeFile
	readYAML(t, MainFile, &f)
	return f.Services[service].Volumes
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

func containsPrefix(list []string, prefix string) bool {
	for _, x := range list {
		if strings.HasPrefix(x, prefix) {
			return true
		}
	}
	return false
}
