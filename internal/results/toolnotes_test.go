package results

import (
	"bytes"
	"strings"
	"testing"

	"github.com/protobench/protobench/internal/record"
)

// TestToolNotesInSummary: a caveat a tool attached to its records reaches summary.md once.
func TestToolNotesInSummary(t *testing.T) {
	note := "h2load does not read grpc-status"
	recs := []record.Record{
		{Scenario: "s", Step: "a", Target: "grpc", Tool: "h2load", Model: "closed", Notes: []string{note}},
		{Scenario: "s", Step: "b", Target: "grpc", Tool: "h2load", Model: "closed", Notes: []string{note}},
		{Scenario: "s", Step: "a", Target: "grpc", Tool: "protobench", Model: "closed"},
	}
	var b bytes.Buffer
	if err := WriteSummary(&b, nil, recs); err != nil {
		t.Fatal(err)
	}
	if got := strings.Count(b.String(), "- Note on h2load: "+note); got != 1 {
		t.Errorf("note appears %d times in:\n%s", got, b.String())
	}
}

func TestStackPlacesByTool(t *testing.T) {
	recs := []record.Record{
		{Tool: "protobench", ObservabilityCPUSet: "1"}, {Tool: "k6", ObservabilityCPUSet: "0"},
		{Tool: "wrk", ObservabilityCPUSet: "1"}, {Tool: "ghz", ObservabilityCPUSet: "0"}, {Tool: "k6", ObservabilityCPUSet: "0"},
	}
	want := "; the stack sat on cpuset 0 during ghz, k6, on cpuset 1 during protobench, wrk runs"
	if got := StackPlaces(recs); got != want {
		t.Errorf("StackPlaces = %q, want %q", got, want)
	}
	// ghz's repeats sat apart (the stack's place follows each cell's previous repeat).
	recs = append(recs, record.Record{Tool: "ghz", ObservabilityCPUSet: "1"}, record.Record{Tool: "ghz", ObservabilityCPUSet: "1"})
	want = "; the stack sat on cpuset 0 during ghz (1 of 3), k6, on cpuset 1 during ghz (2 of 3), protobench, wrk runs"
	if got := StackPlaces(recs); got != want {
		t.Errorf("StackPlaces = %q, want %q", got, want)
	}
	if got := StackPlaces([]record.Record{{Tool: "k6"}}); got != "" {
		t.Errorf("records of a version that did not place the stack: %q, want nothing", got)
	}
}
