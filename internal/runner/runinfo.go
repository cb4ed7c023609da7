package runner

import (
	"encoding/json"
	"time"

	"github.com/protobench/protobench/internal/hostinfo"
	"github.com/protobench/protobench/internal/hostspeed"
	"github.com/protobench/protobench/internal/images"
	"github.com/protobench/protobench/internal/scenario"
)

// RunInfo is run.json: everything needed to judge whether two results folders are comparable.
type RunInfo struct {
	RunID          string          `json:"run_id"`
	Scenario       string          `json:"scenario"`
	ScenarioFile   string          `json:"scenario_file"`
	ScenarioSHA256 string          `json:"scenario_sha256"`
	Command        []string        `json:"command"`
	Quick          bool            `json:"quick"`
	Started        time.Time       `json:"started"`
	Finished       *time.Time      `json:"finished,omitempty"`
	Host           hostinfo.Host   `json:"host"`
	ComposeVersion string          `json:"compose_version"`
	Images         []images.Image  `json:"images"`
	Layout         scenario.Layout `json:"cpu_layout"`
	ServerKnobs    map[string]any  `json:"server_knobs"` // per target, as the scenario set them
	Notes          []string        `json:"notes"`
	PrometheusURL  string          `json:"prometheus_url"`
	GrafanaURL     string          `json:"grafana_url,omitempty"`
	ComposeProject string          `json:"compose_project,omitempty"`
	PlanFlags      *PlanFlags      `json:"plan_flags,omitempty"`
	// Engine ran the containers: compose (empty in older folders) or swarm. Swarm is the
	// engine's own account of where the run ran (engine.Description.Detail), kept as the engine
	// wrote it; only the swarm engine gives one (its nodes, network and placement), under the key
	// run.json has always had for it.
	Engine string          `json:"engine,omitempty"`
	Swarm  json.RawMessage `json:"swarm,omitempty"`
	// HostSpeed is the host speed index of the server's and the tools' cores at the start and
	// end of the run, for compare to tell the machine's drift from the code's change.
	HostSpeed *hostspeed.Record `json:"host_speed,omitempty"`
	// Resumes are the later sessions that continued this run; the fields above stay as the
	// first session wrote them.
	Resumes []Resume `json:"resumes,omitempty"`
	// Preflight is what the pre-flight check found at the start (internal/doctor), one line
	// each: a warning there explains a flag here.
	Preflight []string `json:"preflight,omitempty"`
	// TLS names the run's certificates when a step is TLS.
	TLS *TLSInfo `json:"tls,omitempty"`
}
