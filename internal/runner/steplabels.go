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
}

// trackSteps labels sr's containers, and writes step series to the Prometheus at promURL (as
// the host reaches it).
func trackSteps(sr *stepRunner, promURL string) *stepTracking {
	return &stepTracking{sr: sr, exporter: stepinfo.New(promURL, sr.log)}
}

// run runs r with its labels and step series around it.
func (t *stepTracking) run(ctx context.Context, plan *scenario.Plan, r scenario.Run) record.Record {
	st := stepinfo.Step{RunID: t.sr.runID, Scenario: t.sr.scenario, Step: r.Step, Repeat: r.Repeat, Target: r.Target, Tool: r.Tool}
	t.sr.labels = st.ComposeEnv()
	defer func() { t.sr.labels = nil }()
	t.exporter.Begin(ctx, st)
	rec := t.sr.run(ctx, plan, r)
	// An interrupted run still ends its step_info series, so no region stays open.
	t.exporter.Finish(context.WithoutCancel(ctx), st, rec)
	return rec
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
