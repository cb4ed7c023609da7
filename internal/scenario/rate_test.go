package scenario

import (
	"errors"
	"fmt"
	"strings"
	"testing"
)

// TestRateAtOrBelowZeroRefusedAtItsLine: an open-model rate of 0 or below, on a step or in its
// matrix, is refused at its own line, naming the field and what was expected (issue 36).
func TestRateAtOrBelowZeroRefusedAtItsLine(t *testing.T) {
	cases := []struct {
		name  string
		yaml  string
		line  int
		field string
	}{
		{"zero", withStep("    model: open", "    rate: 0"), 8, "steps[0].rate"},
		{"negative", withStep("    model: open", "    rate: -250"), 8, "steps[0].rate"},
		{"zero in a matrix", withStep("    model: open", "    matrix:", "      rate: [100, 0]"), 9, "steps[0].matrix.rate[1]"},
		{"negative in a matrix", withStep("    model: open", "    matrix:", "      rate: [-1]"), 9, "steps[0].matrix.rate[0]"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse("x.yaml", []byte(tc.yaml))
			var es Errors
			if !errors.As(err, &es) {
				t.Fatalf("got %v (%T), want scenario Errors for:\n%s", err, err, tc.yaml)
			}
			prefix := fmt.Sprintf("x.yaml:%d: %s: ", tc.line, tc.field)
			for _, e := range es {
				if s := e.Error(); strings.HasPrefix(s, prefix) && strings.Contains(s, "expected a number > 0") {
					return
				}
			}
			t.Errorf("want an error starting %q saying %q; got:\n%v", prefix, "expected a number > 0", err)
		})
	}
}
