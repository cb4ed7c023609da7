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
