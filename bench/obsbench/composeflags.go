package obsbench

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"go.yaml.in/yaml/v3"
)

// composeCommands reads cAdvisor's and node-exporter's command lines from the compose file, so
// that the stack this benchmark measures is the one runs use, collector for collector, and a
// change there is measured here without a second copy to keep in step.
func composeCommands(root string) (cadvisor, nodeExporter []string, err error) {
	path := filepath.Join(root, "compose", "docker-compose.yml")
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, nil, err
	}
	var file struct {
		Services map[string]struct {
			Command []string `yaml:"command"`
		} `yaml:"services"`
	}
	if err := yaml.Unmarshal(b, &file); err != nil {
		return nil, nil, fmt.Errorf("%s: %w", path, err)
	}
	cadvisor, nodeExporter = file.Services["cadvisor"].Command, file.Services["node-exporter"].Command
	if len(cadvisor) == 0 || len(nodeExporter) == 0 {
		return nil, nil, fmt.Errorf("%s: services.cadvisor.command and services.node-exporter.command must be lists of flags", path)
	}
	return cadvisor, nodeExporter, nil
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

func sortedKeys(m map[string]string) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
