package scenario

import (
	"fmt"
	"testing"
)

// TestShuffleWithinRepeats: a seed reorders the runs within each repeat of a step and nothing
// else (every repeat still holds the same runs, repeats do not interleave, IDs are the
// unshuffled ones); the same seed gives the same order, seed 0 the scenario's, and over many
// seeds each target comes first about as often as the other.
func TestShuffleWithinRepeats(t *testing.T) {
	sc, err := Parse("s.yaml", []byte(`name: s
description: shuffle
steps:
  - name: a
    targets: [grpc, rest]
    tools: [protobench]
    method: GetUser
    repeats: 4
    duration: 1s
    matrix:
      connections: [1, 2]
`))
	if err != nil {
		t.Fatal(err)
	}
	plan := func(seed uint64) *Plan {
		p, err := sc.Plan(PlanOptions{Cores: 2, Seed: seed})
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	order := func(p *Plan) string {
		s := ""
		for _, r := range p.Runs {
			s += fmt.Sprintf("%s/%s/r%d ", r.Step, r.Target, r.Repeat)
		}
		return s
	}
	fixed := plan(0)
	if order(plan(0)) != order(fixed) || fixed.Runs[0].Target != "grpc" {
		t.Fatalf("seed 0 is not the scenario's order: %s", order(fixed))
	}
	if order(plan(42)) != order(plan(42)) {
		t.Error("the same seed gave two orders")
	}
	ids := map[string]bool{}
	for _, r := range fixed.Runs {
		ids[r.ID] = true
	}
	grpcFirst := 0
	const seeds = 400
	for seed := uint64(1); seed <= seeds; seed++ {
		p := plan(seed)
		rep := 1
		for i, r := range p.Runs {
			if !ids[r.ID] {
				t.Fatalf("seed %d: run %s is not in the unshuffled plan", seed, r.ID)
			}
			if r.Repeat < rep {
				t.Fatalf("seed %d: repeat %d after repeat %d at run %d", seed, r.Repeat, rep, i)
			}
			rep = r.Repeat
		}
		if p.Runs[0].Target == "grpc" {
			grpcFirst++
		}
	}
	// Binomial(400, ½): 200 ± 10 standard deviation; 4 deviations either side.
	if grpcFirst < 160 || grpcFirst > 240 {
		t.Errorf("grpc ran first in %d of %d shuffled plans", grpcFirst, seeds)
	}
}
