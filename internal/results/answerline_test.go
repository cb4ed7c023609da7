package results

import (
	"strings"
	"testing"
)

func TestAnswerLineFromTheHeadlineStepAlone(t *testing.T) {
	plan := testPlan(t)
	all := testRecords(plan)
	var headline = all[:0:0]
	for _, r := range all {
		if r.Step == "getuser" {
			headline = append(headline, r)
		}
	}
	line := AnswerLine(plan, headline)
	// grpc's median 120 over rest's 60: 2×, with the paired interval's method and n.
	for _, want := range []string{"Answer: throughput grpc / rest in getuser: ", "paired", "n=5", "unpaired"} {
		if !strings.Contains(line, want) {
			t.Errorf("answer line %q lacks %q", line, want)
		}
	}
	if line != AnswerLine(plan, all) {
		t.Errorf("the answer changed once the explaining steps ran:\n%s\n%s", line, AnswerLine(plan, all))
	}
	if got := AnswerLine(plan, nil); got != "" {
		t.Errorf("no records: %q", got)
	}
}
