package runner

import (
	"context"

	"github.com/protobench/protobench/internal/record"
	"github.com/protobench/protobench/internal/scenario"
	"github.com/protobench/protobench/internal/stepinfo"
)

// stepTracking follows a run for the dashboards: every container a step starts (its server, its
// warm-up and its tool) gets the step's protobench.* labels through the compose environment, so
// cAdvisor's series carry them, and the step's window and figures go to Prometheus (package
// stepinfo) for the annotation regions and the step-summary row.
type stepTracking struct {
	sr       *stepRunner
	exporter *stepinfo.Exporter
	stack    *labelledStack
}

// trackSteps wraps sr's stack so that its containers are labelled, and writes step series to the
// Prometheus at promURL (as the host reaches it).
func trackSteps(sr *stepRunner, promURL string) *stepTracking {
	ls := &labelledStack{Stack: sr.stack}
	sr.stack = ls
	return &stepTracking{sr: sr, exporter: stepinfo.New(promURL, sr.log), stack: ls}
}

// run runs r with its labels and step series around it.
func (t *stepTracking) run(ctx context.Context, plan *scenario.Plan, r scenario.Run) record.Record {
	st := stepinfo.Step{RunID: t.sr.runID, Scenario: t.sr.scenario, Step: r.Step, Repeat: r.Repeat, Target: r.Target, Tool: r.Tool}
	t.stack.env = st.ComposeEnv()
	defer func() { t.stack.env = nil }()
	t.exporter.Begin(ctx, st)
	rec := t.sr.run(ctx, plan, r)
	// An interrupted run still ends its step_info series, so no region stays open.
	t.exporter.Finish(context.WithoutCancel(ctx), st, rec)
	return rec
}

// labelledStack adds the current step's label environment to every container it starts.
type labelledStack struct {
	Stack
	env map[string]string
}

func (l *labelledStack) Recreate(ctx context.Context, service string, env map[string]string) error {
	return l.Stack.Recreate(ctx, service, withEnv(env, l.env))
}

func (l *labelledStack) Run(ctx context.Context, spec OneOff) ([]byte, []byte, int, error) {
	spec.Env = withEnv(spec.Env, l.env)
	return l.Stack.Run(ctx, spec)
}

// withEnv is env plus extra in a new map; env's own entries win.
func withEnv(env, extra map[string]string) map[string]string {
	out := make(map[string]string, len(env)+len(extra))
	for k, v := range extra {
		out[k] = v
	}
	for k, v := range env {
		out[k] = v
	}
	return out
}
