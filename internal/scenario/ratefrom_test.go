package scenario

import (
	"errors"
	"fmt"
	"strings"
	"testing"
)

// rateFromFile is a closed-loop capacity step (lines 4-6) and an equal-load step after it whose
// rate_from sits on line 12; extra lines go at the end of the second step.
func rateFromFile(rateFrom string, extra ...string) string {
	return "name: t\ndescription: d\nsteps:\n" +
		"  - name: cap\n    targets: [grpc, rest]\n    method: GetUser\n" +
		"  - name: eq\n    targets: [grpc, rest]\n    method: GetUser\n    model: open\n    in_flight: 10\n" +
		"    rate_from: " + rateFrom + "\n" + strings.Join(extra, "\n") + "\n"
}

func TestRateFrom(t *testing.T) {
	sc, err := Parse("x.yaml", []byte(rateFromFile("{step: cap, percent: [25, 90]}")))
	if err != nil {
		t.Fatal(err)
	}
	plan, err := sc.Plan(PlanOptions{Cores: 2})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, r := range plan.Runs {
		if r.BaseStep == "eq" && r.Repeat == 1 {
			got = append(got, fmt.Sprintf("%s %s %v %s %v", r.Step, r.Target, r.LoadPercent, r.CapacityStep, r.Rate))
		}
	}
	want := "eq-load25 grpc 25 cap 0|eq-load25 rest 25 cap 0|eq-load90 grpc 90 cap 0|eq-load90 rest 90 cap 0"
	if strings.Join(got, "|") != want {
		t.Errorf("runs %q, want %q", strings.Join(got, "|"), want)
	}

	bad := []struct {
		name, yaml, field, msg string
		line                   int
	}{
		{"unknown step", rateFromFile("{step: nope, percent: [50]}"), "steps[1].rate_from.step", `no step "nope" before this one`, 12},
		{"percent above 100", rateFromFile("{step: cap, percent: [120]}"), "steps[1].rate_from.percent[0]", "", 12},
		{"missing percent", rateFromFile("{step: cap}"), "steps[1].rate_from", `missing key "percent"`, 12},
		{"with a rate", rateFromFile("{step: cap, percent: [50]}", "    rate: 100"), "steps[1].rate_from", "keep one", 12},
		{"open capacity step", strings.Replace(rateFromFile("{step: cap, percent: [50]}"), "    method: GetUser\n  - name: eq", "    method: GetUser\n    model: open\n    rate: 10\n  - name: eq", 1), "steps[1].rate_from.step", "runs the open model", 14},
	}
	for _, tc := range bad {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse("x.yaml", []byte(tc.yaml))
			var es Errors
			if !errors.As(err, &es) {
				t.Fatalf("error %v, want Errors", err)
			}
			prefix := fmt.Sprintf("x.yaml:%d: %s: ", tc.line, tc.field)
			for _, e := range es {
				if s := e.Error(); strings.HasPrefix(s, prefix) && strings.Contains(s, tc.msg) {
					return
				}
			}
			t.Errorf("want an error starting %q containing %q; got:\n%v", prefix, tc.msg, err)
		})
	}
}
