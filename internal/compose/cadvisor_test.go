package compose

import (
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/protobench/protobench/internal/dashboards"
)

// cadvisorMetricSets maps a cAdvisor series name prefix to the --enable_metrics set that produces
// it; the prefixes missing here (container_spec_, container_last_seen, ...) come with any set.
var cadvisorMetricSets = map[string]string{
	"container_cpu_":      "cpu",
	"container_memory_":   "memory",
	"container_network_":  "network",
	"container_fs_":       "disk",
	"container_blkio_":    "diskIO",
	"container_threads":   "threads",
	"container_processes": "process",
}

var containerSeries = regexp.MustCompile(`\bcontainer_[a-z_]+`)

// cAdvisor collects only what is read, so every container series a dashboard queries must come
// from a metric set compose's cAdvisor enables, or its panel stays empty.
func TestCadvisorCollectsWhatDashboardsRead(t *testing.T) {
	var f composeFile
	readYAML(t, MainFile, &f)
	var enabled []string
	for _, arg := range f.Services["cadvisor"].Command {
		if v, ok := strings.CutPrefix(arg, "--enable_metrics="); ok {
			enabled = strings.Split(v, ",")
		}
	}
	if len(enabled) == 0 {
		t.Fatal("cadvisor has no --enable_metrics: it would collect every default set, most of them unread")
	}
	read := map[string]bool{}
	for _, q := range dashboards.Queries() {
		for _, name := range containerSeries.FindAllString(q.Expr, -1) {
			if strings.HasPrefix(name, "container_label_") {
				continue // a label of cAdvisor's series, not a series
			}
			for prefix, set := range cadvisorMetricSets {
				if strings.HasPrefix(name, prefix) {
					read[set] = true
					if !slices.Contains(enabled, set) {
						t.Errorf("%s reads %s, from cAdvisor's %q metrics, which --enable_metrics=%s leaves out", q.Name, name, set, strings.Join(enabled, ","))
					}
				}
			}
		}
	}
	if !read["cpu"] || !read["memory"] {
		t.Errorf("no dashboard query reads container CPU and memory (sets read: %v): the check above matched nothing", read)
	}
}
