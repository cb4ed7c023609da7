package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/protobench/protobench/internal/targets"
)

// Every knob of every target has exactly one row, and a knob all targets share is listed once.
func TestKnobTableListsEveryKnobOnce(t *testing.T) {
	all := targets.All()
	table := knobTable(all)
	for _, tg := range all {
		for name, k := range tg.Knobs {
			rows := strings.Count(table, "| `"+name+"` |")
			if rows != 1 {
				t.Errorf("%s.%s: %d rows, want 1\n%s", tg.Name, name, rows, table)
			}
			variable := "`" + k.Env + "`"
			if k.Client {
				variable = "| " + clientKnobVariable + " |"
			}
			if !strings.Contains(table, variable) {
				t.Errorf("%s.%s: variable %s missing", tg.Name, name, variable)
			}
		}
	}
	if !strings.Contains(table, "| every server | `max_payload_bytes` |") {
		t.Errorf("max_payload_bytes is not listed for every server:\n%s", table)
	}
	// No registry target has a boolean knob since python-grpc's gzip became the step's
	// compression; a made-up one still says how the server reads it.
	flag := targets.Target{Name: "b", Knobs: map[string]targets.Knob{"flag": {Env: "B_FLAG", Kind: targets.KnobBool}}}
	if bt := knobTable([]targets.Target{flag}); !strings.Contains(bt, "`B_FLAG` (1 or 0)") {
		t.Errorf("a boolean knob does not say how the server reads it:\n%s", bt)
	}
}

// A knob only some targets share (same name, different variables) is listed per target.
func TestKnobTableKeepsSameNamedKnobsApart(t *testing.T) {
	a := targets.Target{Name: "a", Knobs: map[string]targets.Knob{"threads": {Env: "A_THREADS", Kind: targets.KnobInt, Min: 1}}}
	b := targets.Target{Name: "b", Knobs: map[string]targets.Knob{"threads": {Env: "B_THREADS", Kind: targets.KnobInt, Min: 1}}}
	table := knobTable([]targets.Target{a, b})
	for _, want := range []string{"| `a` | `threads` | integer ≥ 1 | `A_THREADS` |", "| `b` | `threads` | integer ≥ 1 | `B_THREADS` |"} {
		if !strings.Contains(table, want) {
			t.Errorf("missing row %q in\n%s", want, table)
		}
	}
}

func TestScenarioReadmeKnobsNeedsItsMarkers(t *testing.T) {
	root := t.TempDir()
	if err := os.MkdirAll(filepath.Join(root, "scenarios"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(root, "scenarios", "README.md"), []byte("# no table here\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := scenarioReadmeKnobs(root); err == nil || !strings.Contains(err.Error(), "markers") {
		t.Fatalf("error %v, want one naming the markers", err)
	}
	text := "intro\n" + knobTableBegin + "\nold table\n" + knobTableEnd + "\noutro\n"
	if err := os.WriteFile(filepath.Join(root, "scenarios", "README.md"), []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := scenarioReadmeKnobs(root)
	if err != nil {
		t.Fatal(err)
	}
	s := string(out)
	if strings.Contains(s, "old table") || !strings.HasPrefix(s, "intro\n") || !strings.HasSuffix(s, knobTableEnd+"\noutro\n") || !strings.Contains(s, "`PROTOBENCH_GRPC_STREAM_WORKERS`") {
		t.Fatalf("rebuilt README:\n%s", s)
	}
}
