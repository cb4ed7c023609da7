package scenario

import (
	"testing"
)

func TestHeadlineStepRunsFirst(t *testing.T) {
	src := `name: h
description: the headline is the third step
steps:
  - {name: warm, targets: [grpc], method: Echo}
  - name: tls
    targets: [grpc, rest]
    method: GetUser
    matrix: {tls: [false, true]}
  - {name: pair, targets: [grpc, rest], method: GetUser, baseline: rest}
  - {name: after, targets: [grpc, rest], method: Echo}
`
	sc := mustParse(t, src)
	if h := sc.HeadlineStep(); h != 2 {
		t.Fatalf("HeadlineStep = %d, want 2 (the first pair without a matrix)", h)
	}
	p, err := sc.Plan(PlanOptions{Cores: 2, Repeat: 2})
	if err != nil {
		t.Fatal(err)
	}
	if p.Headline != "pair" {
		t.Errorf("Headline = %q", p.Headline)
	}
	var steps []string
	for _, r := range p.Runs {
		if len(steps) == 0 || steps[len(steps)-1] != r.BaseStep {
			steps = append(steps, r.BaseStep)
		}
	}
	want := []string{"pair", "warm", "tls", "after"}
	if len(steps) != len(want) {
		t.Fatalf("step order %v, want %v", steps, want)
	}
	for i := range want {
		if steps[i] != want[i] {
			t.Fatalf("step order %v, want %v", steps, want)
		}
	}
	none := mustParse(t, "name: n\ndescription: d\nsteps:\n  - {name: a, targets: [grpc], method: Echo}\n")
	if h := none.HeadlineStep(); h != -1 {
		t.Errorf("one target only: HeadlineStep = %d", h)
	}
}
