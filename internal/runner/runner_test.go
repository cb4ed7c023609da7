package runner

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/protobench/protobench/internal/images"
	"github.com/protobench/protobench/internal/record"
	"github.com/protobench/protobench/internal/scenario"
	_ "github.com/protobench/protobench/internal/tool/wrk" // the adapter a run looks up
)

func TestParseRunFlags(t *testing.T) {
	tests := []struct {
		name    string
		args    []string
		want    Options
		wantErr string
	}{
		{"name first", []string{"grpc-vs-rest", "--quick", "--repeat", "2"}, Options{Scenario: "grpc-vs-rest", Quick: true, Repeat: 2, Engine: EngineCompose}, ""},
		{"name after flags", []string{"--only", "getuser", "smoke"}, Options{Scenario: "smoke", Only: "getuser", Engine: EngineCompose}, ""},
		{"tools list", []string{"smoke", "--tools", "ghz,wrk"}, Options{Scenario: "smoke", Tools: []string{"ghz", "wrk"}, Engine: EngineCompose}, ""},
		{"file path", []string{"./my/scenario.yaml", "--keep-up", "--out", "/tmp/x"}, Options{Scenario: "./my/scenario.yaml", KeepUp: true, OutDir: "/tmp/x", Engine: EngineCompose}, ""},
		{"resume without name", []string{"--resume", "results/x"}, Options{Resume: "results/x", Engine: EngineCompose}, ""},
		{"no scenario", []string{"--quick"}, Options{}, "name a scenario"},
		{"two scenarios", []string{"a", "b"}, Options{}, `unexpected argument "b"`},
		{"bad flag", []string{"smoke", "--fast"}, Options{}, "flag provided but not defined"},
		{"bad repeat", []string{"smoke", "--repeat", "x"}, Options{}, "invalid value"},
		{"project", []string{"smoke", "--project", "pb-2", "--publish"}, Options{Scenario: "smoke", Publish: true, Engine: EngineCompose}, ""},
		{"bad project", []string{"smoke", "--project", "My Stack"}, Options{}, "--project"},
		{"swarm", []string{"smoke", "--engine", "swarm"}, Options{Scenario: "smoke", Engine: EngineSwarm}, ""},
		{"bad engine", []string{"smoke", "--engine", "k8s"}, Options{}, "want compose or swarm"},
		{"force layout", []string{"smoke", "--force-layout"}, Options{Scenario: "smoke", ForceLayout: true, Engine: EngineCompose}, ""},
		{"swarm publish", []string{"smoke", "--engine", "swarm", "--publish"}, Options{}, "--publish works with --engine compose only"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var stderr bytes.Buffer
			got, err := parseRunFlags(tt.args, &stderr)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("error = %v, want it to contain %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			// Stack defaults come from the environment (PROTOBENCH_PROJECT, PROTOBENCH_DOCKER).
			if got.Project == "" || got.Docker == "" {
				t.Fatalf("project %q docker %q: want defaults", got.Project, got.Docker)
			}
			got.Project, got.Docker = "", ""
			if !reflect.DeepEqual(got, tt.want) {
				t.Fatalf("got %+v, want %+v", got, tt.want)
			}
		})
	}
}

func TestResultsDirNameSortsByTime(t *testing.T) {
	a := resultsDirName(time.Date(2026, 1, 2, 3, 4, 5, 0, time.FixedZone("x", 3600)), "smoke")
	if a != "20260102T020405Z-smoke" {
		t.Fatalf("resultsDirName = %q (must be UTC)", a)
	}
}

func TestLoadFinishedSkipsFailedRuns(t *testing.T) {
	dir := t.TempDir()
	recs := []record.Record{
		{Step: "a", Target: "grpc", Tool: "protobench", Repeat: 1, Requests: 10, ThroughputRPS: 5},
		{Step: "a", Target: "rest", Tool: "protobench", Repeat: 1, Error: "start rest: boom", Flags: []string{record.FlagFailed}},
		{Step: "a", Target: "rest", Tool: "wrk", Repeat: 1, Requests: 7, Error: "wrk exited with 1"},
	}
	if err := writeJSON(filepath.Join(dir, "results.json"), recs); err != nil {
		t.Fatal(err)
	}
	kept, done, err := loadFinished(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(kept) != 1 {
		t.Fatalf("kept %d records, want 1 (failed runs, measured or not, are redone)", len(kept))
	}
	if !done[recordKey("a", "grpc", "protobench", 1)] || done[recordKey("a", "rest", "protobench", 1)] || done[recordKey("a", "rest", "wrk", 1)] {
		t.Fatalf("done = %v", done)
	}
	if _, _, err := loadFinished(t.TempDir()); err != nil {
		t.Fatalf("a fresh folder must resume from nothing: %v", err)
	}
	if err := os.WriteFile(filepath.Join(dir, "results.json"), []byte("{"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, _, err := loadFinished(dir); err == nil || !strings.Contains(err.Error(), "results.json") {
		t.Fatalf("a corrupt results.json must be reported with its path, got %v", err)
	}
}

func TestEnvironmentsCarryCapsAndKnobs(t *testing.T) {
	r := scenario.Run{
		Caps:   scenario.Caps{ServerCPUs: 1, ServerMemoryBytes: 1 << 30, ClientCPUs: 0.5, ClientMemoryBytes: 512 << 20},
		Layout: scenario.Layout{ServerCPUSet: "0", ClientCPUSet: "1"},
		Env:    map[string]string{"PROTOBENCH_GRPC_MAX_CONCURRENT_STREAMS": "100000"},
	}
	s := serverEnvironment(r)
	if s["PROTOBENCH_SERVER_CPUS"] != "1" || s["PROTOBENCH_SERVER_CPUSET"] != "0" || s["PROTOBENCH_SERVER_MEM"] != "1073741824" || s["PROTOBENCH_GRPC_MAX_CONCURRENT_STREAMS"] != "100000" {
		t.Fatalf("server env = %v", s)
	}
	c := clientEnvironment(r)
	if c["PROTOBENCH_CLIENT_CPUS"] != "0.5" || c["PROTOBENCH_CLIENT_CPUSET"] != "1" {
		t.Fatalf("client env = %v", c)
	}
}

func TestMergeMeasuredKeepsRunnerFlags(t *testing.T) {
	rec := record.Record{Flags: []string{record.FlagThrottled}}
	parts := []record.ClientPart{{Part: 1, Requests: 3, LatencyCount: 3}, {Part: 2, Requests: 2, LatencyCount: 2}}
	mergeMeasured(&rec, record.Record{Requests: 5, ThroughputRPS: 2.5, DurationS: 2, LatencyCount: 5, ClientParts: parts,
		Flags: []string{record.FlagRateNotMet, record.FlagThrottled}})
	if rec.Requests != 5 || rec.ThroughputRPS != 2.5 || rec.DurationS != 2 {
		t.Fatalf("measured fields not copied: %+v", rec)
	}
	if rec.LatencyCount != 5 || !reflect.DeepEqual(rec.ClientParts, parts) {
		t.Fatalf("the merged histogram's count and the parts not copied: %d, %+v", rec.LatencyCount, rec.ClientParts)
	}
	if !reflect.DeepEqual(rec.Flags, []string{record.FlagThrottled, record.FlagRateNotMet}) {
		t.Fatalf("flags = %v", rec.Flags)
	}
}

func TestMissingToolFailsItsRunsOnly(t *testing.T) {
	set := images.Set{
		images.Wrk: {Name: images.Wrk, Ref: "protobench/wrk:abc", Source: images.Built, Variant: "wrk",
			Note: "Debian wrk 4.1 stands in for wrk2"},
		"ghz":     {Name: "ghz", Source: images.Unavailable, Note: "go install failed"},
		images.K6: {Name: images.K6, Ref: "protobench/k6:abc", Source: images.Built},
	}
	missing := missingTools(set)
	if !strings.Contains(missing["wrk2"], "no wrk2") || !strings.Contains(missing["ghz"], "go install failed") {
		t.Errorf("missing = %v", missing)
	}
	for _, ok := range []string{"wrk", "k6"} {
		if why, gone := missing[ok]; gone {
			t.Errorf("%s reported missing: %s", ok, why)
		}
	}
	set[images.Wrk] = images.Image{Name: images.Wrk, Ref: "protobench/wrk:def", Source: images.Built, Variant: "wrk2"}
	if why, gone := missingTools(set)["wrk2"]; gone {
		t.Errorf("wrk2 image reported missing: %s", why)
	}

	// The run fails before any container starts (the stack is nil: touching it would panic).
	sc, err := scenario.Parse("wrk2.yaml", []byte(`name: wrk2-check
description: an open-model wrk2 step
defaults: {warmup: 1s, duration: 2s, repeats: 1, cooldown: 0s}
steps:
  - name: paced
    targets: [rest]
    tools: [wrk2]
    method: GetUser
    model: open
    rate: 100
`))
	if err != nil {
		t.Fatal(err)
	}
	plan, err := sc.Plan(scenario.PlanOptions{Cores: 2})
	if err != nil {
		t.Fatal(err)
	}
	sr := &stepRunner{scenario: sc.Name, missingTools: missing, log: func(string, ...any) {}}
	rec := sr.run(context.Background(), plan, plan.Runs[0])
	if !strings.Contains(rec.Error, "wrk2 cannot run here") || !slices.Contains(rec.Flags, record.FlagFailed) {
		t.Errorf("record error %q flags %v", rec.Error, rec.Flags)
	}
}

func TestProgressPrintsEachRunsFigures(t *testing.T) {
	var buf strings.Builder
	p := &progress{w: &buf, start: time.Now(), total: 2, estimate: time.Minute}
	r := scenario.Run{Step: "getuser", Target: "grpc", Tool: "loadgen", Repeat: 1}
	p.begin(1, r)
	p.result(record.Record{ThroughputRPS: 61896, LatencyMs: record.Latency{P99: 4.8}, ServerCPUPercentOfCap: 98.4})
	p.finish(r)
	lines := strings.Split(strings.TrimSpace(buf.String()), "\n")
	if len(lines) != 2 || !strings.HasPrefix(lines[0], "[1/2] getuser") ||
		strings.TrimSpace(lines[1]) != "61,896 req/s, p99 4.8 ms, server CPU 98.4 % of its cap" {
		t.Errorf("progress printed:\n%s", buf.String())
	}
}
