package dashboards

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"

	"github.com/protobench/protobench/internal/stepinfo"
)

// Stable dashboard uids: Grafana links, the README and the runner's printed URLs use them.
const (
	OverviewUID = "protobench-overview"
	HostUID     = "protobench-host"
)

// tag groups the dashboards so that each links to the others.
const tag = "protobench"

// All returns every dashboard, in a stable order.
func All() []Dashboard { return []Dashboard{Overview(), Host()} }

// section is a titled row of panels laid out left to right, perRow to a line.
type section struct {
	title  string
	perRow int
	panels []Panel
}

// Overview is the dashboard to watch a run on: each step as a region and a summary row, what the
// client saw, what the server did, and whether the containers stayed inside their caps. Every
// panel follows the same step variables.
func Overview() Dashboard {
	d := dashboard(OverviewUID, "protobench overview",
		"Steps as regions and a summary table; client-side throughput and latency from the load "+
			"generator and k6; server-side rate and latency from the server's metrics, and its TLS "+
			"handshakes where a step churns connections; container CPU, throttling and memory from "+
			"cAdvisor; host CPU. The variables select runs, steps, repeats, targets and tools on "+
			"every panel.",
		append(stepVariables(), nodeVariable()),
		section{"Steps", 2, []Panel{
			stepSummaryPanel(), stepTimelinePanel(),
		}},
		section{"Client (load generator)", 2, []Panel{
			clientThroughputPanel(), clientLatencyPanel(),
			clientCodesPanel(), clientServiceTimePanel(),
			clientInflightPanel(), clientSchedulerLagPanel(),
		}},
		section{"k6", 2, []Panel{
			k6ThroughputPanel(), k6LatencyPanel(),
		}},
		section{"Server", 3, []Panel{
			serverRequestRatePanel(), serverLatencyPanel(), serverMessagesPanel(),
		}},
		section{"Server TLS", 2, []Panel{
			serverTLSHandshakesPanel(), serverTLSHandshakeCPUPanel(),
		}},
		section{"Containers (cAdvisor)", 2, []Panel{
			serverCPUPanel(), serverThrottlingPanel(),
			serverMemoryPanel(), toolCPUPanel(),
		}},
		section{"Host", 1, []Panel{
			hostCPUPerCorePanel(nodeMatcher, true),
		}},
	)
	d.Annotations.List = append(d.Annotations.List, stepAnnotation())
	return d
}

// stepVariables are the run, scenario, step, repeat, target and tool variables, each filled from
// protobench_step_info within the ones before it, so that choosing a run narrows the steps.
func stepVariables() []Variable {
	var vars []Variable
	titles := map[string]string{"run_id": "Run", "scenario": "Scenario", "step": "Step", "repeat": "Repeat", "target": "Target", "tool": "Tool"}
	for i, l := range stepLabels {
		vars = append(vars, labelVariable(l, titles[l], stepinfo.InfoMetric, matchers("", stepLabels[:i]...), ".*"))
	}
	return vars
}

// Host is the node-exporter view of the machine a run happened on.
func Host() Dashboard {
	return dashboard(HostUID, "protobench host",
		"The benchmark host from node-exporter: CPU per mode and per core, load, memory, network.",
		[]Variable{
			// node (swarm runs only: see nodeMatcher) narrows the instances.
			labelVariable("node", "Node", "node_uname_info", "", ".*"),
			labelVariable("instance", "Instance", "node_uname_info", nodeMatcher, ".*"),
		},
		section{"CPU", 2, []Panel{
			hostCPUModesPanel(), hostCPUPerCorePanel(hostSelector, false),
			hostLoadPanel(), hostContextSwitchesPanel(),
		}},
		section{"Memory and network", 3, []Panel{
			hostMemoryPanel(), hostNetworkBytesPanel(), hostNetworkPacketsPanel(),
		}},
	)
}

// dashboard assembles a dashboard: rows and panels get ids in order and grid positions from their
// section, so adding a panel never needs hand-placed coordinates.
func dashboard(uid, title, description string, vars []Variable, sections ...section) Dashboard {
	var panels []Panel
	id, y := 1, 0
	for _, s := range sections {
		collapsed := false
		none := []Panel{}
		panels = append(panels, Panel{
			Collapsed: &collapsed,
			GridPos:   GridPos{H: rowHeight, W: gridColumns, X: 0, Y: y},
			ID:        id,
			Panels:    &none,
			Title:     s.title,
			Type:      "row",
		})
		id++
		y += rowHeight
		width := gridColumns / s.perRow
		for i, p := range s.panels {
			col := i % s.perRow
			if i > 0 && col == 0 {
				y += panelHeight
			}
			p.ID = id
			p.GridPos = GridPos{H: panelHeight, W: width, X: col * width, Y: y}
			panels = append(panels, p)
			id++
		}
		y += panelHeight
	}
	return Dashboard{
		Annotations: Annotations{List: []Annotation{{
			BuiltIn:    1,
			Datasource: Datasource{Type: "grafana", UID: "-- Grafana --"},
			Enable:     true,
			Hide:       true,
			IconColor:  "rgba(0, 211, 255, 1)",
			Name:       "Annotations & Alerts",
			Type:       "dashboard",
		}}},
		Description:  description,
		Editable:     true,
		GraphTooltip: 1, // shared crosshair: line up client, server and container at one instant
		Links: []Link{{
			AsDropdown: false, Icon: "external link", IncludeVars: false, KeepTime: true,
			Tags: []string{tag}, Title: "protobench", Tooltip: "", Type: "dashboards",
		}},
		Panels:        panels,
		Refresh:       "5s",
		SchemaVersion: SchemaVersion,
		Tags:          []string{tag},
		Templating:    Templating{List: vars},
		Time:          TimeRange{From: "now-15m", To: "now"},
		Timepicker:    Timepicker{RefreshIntervals: []string{"5s", "10s", "30s", "1m", "5m"}},
		Timezone:      "utc",
		Title:         title,
		UID:           uid,
		Version:       1,
	}
}

// labelVariable is a multi-value variable filled from a label's values on metric{selector},
// re-read whenever the time range changes so that a new run appears without reloading.
func labelVariable(name, label, metric, selector, allValue string) Variable {
	def := "label_values(" + metric + ", " + name + ")"
	if selector != "" {
		def = "label_values(" + metric + "{" + selector + "}, " + name + ")"
	}
	return Variable{
		AllValue:   allValue,
		Current:    Current{Selected: true, Text: []string{"All"}, Value: []string{"$__all"}},
		Datasource: prometheus,
		Definition: def,
		IncludeAll: true,
		Label:      label,
		Multi:      true,
		Name:       name,
		Options:    []any{},
		Query:      VariableQuery{QryType: 1, Query: def, RefID: "PrometheusVariableQueryEditor-VariableQuery"},
		Refresh:    2,
		Sort:       1,
		Type:       "query",
	}
}

// Render is the dashboard's JSON as committed under dashboards/: two-space indent, PromQL's < > &
// left unescaped so the files stay readable, and a final newline.
func Render(d Dashboard) ([]byte, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(d); err != nil {
		return nil, fmt.Errorf("dashboards: render %s: %w", d.UID, err)
	}
	return b.Bytes(), nil
}

// Files maps each file name under dashboards/ (<uid>.json) to its generated content.
func Files() (map[string][]byte, error) {
	files := map[string][]byte{}
	for _, d := range All() {
		b, err := Render(d)
		if err != nil {
			return nil, err
		}
		files[d.UID+".json"] = b
	}
	return files, nil
}

// Write writes every dashboard into dir (created if missing) and returns the paths written.
func Write(dir string) ([]string, error) {
	files, err := Files()
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("dashboards: %w", err)
	}
	var written []string
	for _, d := range All() {
		path := filepath.Join(dir, d.UID+".json")
		if err := os.WriteFile(path, files[d.UID+".json"], 0o644); err != nil {
			return nil, fmt.Errorf("dashboards: %w", err)
		}
		written = append(written, path)
	}
	return written, nil
}

//go:generate go run ./cmd/gendashboards -out ../../dashboards
