package runner

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/protobench/protobench/internal/hostinfo"
	"github.com/protobench/protobench/internal/images"
	"github.com/protobench/protobench/internal/prom"
	"github.com/protobench/protobench/internal/record"
	"github.com/protobench/protobench/internal/results"
	"github.com/protobench/protobench/internal/scenario"
	"github.com/protobench/protobench/internal/tool"
)

// RunInfo is run.json: everything needed to judge whether two results folders are comparable.
type RunInfo struct {
	RunID          string          `json:"run_id"`
	Scenario       string          `json:"scenario"`
	ScenarioFile   string          `json:"scenario_file"`
	ScenarioSHA256 string          `json:"scenario_sha256"`
	Command        []string        `json:"command"`
	Quick          bool            `json:"quick"`
	Started        time.Time       `json:"started"`
	Finished       *time.Time      `json:"finished,omitempty"`
	Host           hostinfo.Host   `json:"host"`
	ComposeVersion string          `json:"compose_version"`
	Images         []images.Image  `json:"images"`
	Layout         scenario.Layout `json:"cpu_layout"`
	ServerKnobs    map[string]any  `json:"server_knobs"` // per target, as the scenario set them
	Notes          []string        `json:"notes"`
	PrometheusURL  string          `json:"prometheus_url"`
	GrafanaURL     string          `json:"grafana_url,omitempty"`
}

// environment is what execute needs from the outside world; tests and the CLI fill it.
type environment struct {
	orchestrator   Orchestrator
	composeVersion string
	images         images.Set
	imageEnv       map[string]string
	prometheusURL  string // as the host reaches it
	grafanaURL     string // empty when Grafana is unavailable
	observability  []string
}

// execute runs a plan in an environment whose images exist, and returns the results folder.
func execute(ctx context.Context, opts Options, plan *scenario.Plan, env environment) (string, error) {
	sc := plan.Scenario
	now := time.Now()
	dir := opts.Resume
	var recs []record.Record
	done := map[string]bool{}
	if dir == "" {
		dir = filepath.Join(opts.OutDir, resultsDirName(now, sc.Name))
	} else {
		var err error
		if recs, done, err = loadFinished(dir); err != nil {
			return "", err
		}
	}
	rawDir := filepath.Join(dir, "raw")
	if err := os.MkdirAll(rawDir, 0o755); err != nil {
		return "", err
	}
	// Tool containers run as non-root users and must be able to write their output files here.
	if err := os.Chmod(rawDir, 0o777); err != nil {
		return "", err
	}
	if err := os.WriteFile(filepath.Join(dir, "scenario.yaml"), sc.Raw, 0o644); err != nil {
		return "", err
	}
	absRaw, err := filepath.Abs(rawDir)
	if err != nil {
		return "", err
	}
	info := RunInfo{
		RunID: filepath.Base(dir), Scenario: sc.Name, ScenarioFile: sc.Path, ScenarioSHA256: sc.Hash(),
		Command: os.Args, Quick: opts.Quick, Started: now.UTC(),
		Host:           hostinfo.Collect(ctx, opts.RepoRoot),
		ComposeVersion: env.composeVersion, Images: env.images.Sorted(), Layout: plan.Layout,
		ServerKnobs: map[string]any{}, Notes: plan.Notes,
		PrometheusURL: env.prometheusURL, GrafanaURL: env.grafanaURL,
	}
	info.Host.ComposeVersion = env.composeVersion
	for _, r := range plan.Runs {
		if len(r.Knobs) > 0 {
			info.ServerKnobs[r.Target] = r.Knobs
		}
	}
	if err := writeJSON(filepath.Join(dir, "run.json"), info); err != nil {
		return "", err
	}

	upEnv := map[string]string{"PROTOBENCH_RAW_DIR": absRaw, "PROTOBENCH_OBS_CPUSET": plan.Layout.ObservabilityCPUSet}
	for k, v := range env.imageEnv {
		upEnv[k] = v
	}
	fmt.Fprintf(opts.Stdout, "protobench: starting %s\n", strings.Join(env.observability, ", "))
	if err := env.orchestrator.Up(ctx, upEnv, env.observability...); err != nil {
		return dir, fmt.Errorf("start the observability stack: %w", err)
	}
	if !opts.KeepUp {
		defer func() {
			if err := env.orchestrator.Down(context.WithoutCancel(ctx)); err != nil {
				fmt.Fprintf(opts.Stderr, "protobench: warning: stopping the stack: %v\n", err)
			}
		}()
	}
	pc := prom.New(env.prometheusURL)
	readyCtx, cancel := context.WithTimeout(ctx, 60*time.Second)
	err = pc.Ready(readyCtx)
	cancel()
	if err != nil {
		return dir, err
	}

	if err := waitScraped(ctx, pc, "cadvisor", 60*time.Second); err != nil {
		// The run still measures throughput and latency; only the server's CPU and memory
		// columns will be empty, and the warning says why.
		fmt.Fprintf(opts.Stderr, "protobench: warning: %v: server CPU and memory will be missing\n", err)
	}

	sr := &stepRunner{
		stack: env.orchestrator, meter: promMeter{pc}, scenario: sc.Name, runID: info.RunID,
		missingTools: missingTools(env.images),
		resultDir:    dir, rawMount: "/raw", promURL: "http://prometheus:9090", settle: 2500 * time.Millisecond,
		log: func(format string, args ...any) { fmt.Fprintf(opts.Stderr, "protobench: "+format+"\n", args...) },
	}
	steps := trackSteps(sr, env.prometheusURL)
	prog := &progress{w: opts.Stdout, start: time.Now(), total: len(plan.Runs), estimate: plan.TotalDuration}
	for i, r := range plan.Runs {
		if ctx.Err() != nil {
			break
		}
		if done[recordKey(r.Step, r.Target, r.Tool, r.Repeat)] {
			prog.finish(r)
			continue
		}
		prog.begin(i+1, r)
		rec := steps.run(ctx, plan, r)
		if rec.Error != "" {
			fmt.Fprintf(opts.Stderr, "protobench: %s: %s\n", r.ID, rec.Error)
		}
		recs = append(recs, rec)
		results.ApplyFlags(recs)
		// Written after every run, so an interrupted run keeps what it measured and --resume
		// can pick up from here.
		if err := writeJSON(filepath.Join(dir, "results.json"), recs); err != nil {
			return dir, err
		}
		prog.finish(r)
		if r.Cooldown > 0 && i < len(plan.Runs)-1 {
			select {
			case <-ctx.Done():
			case <-time.After(r.Cooldown):
			}
		}
	}

	finished := time.Now().UTC()
	info.Finished = &finished
	if err := writeJSON(filepath.Join(dir, "run.json"), info); err != nil {
		return dir, err
	}
	if err := results.WriteAll(dir, info, plan, recs); err != nil {
		return dir, err
	}
	fmt.Fprintln(opts.Stdout)
	if err := results.Table(opts.Stdout, recs, plan); err != nil {
		return dir, err
	}
	if ctx.Err() != nil {
		return dir, fmt.Errorf("interrupted; continue with --resume %s", dir)
	}
	return dir, nil
}

// waitScraped waits until Prometheus has scraped job successfully, so the first step's window
// is covered by container metrics.
func waitScraped(ctx context.Context, pc *prom.Client, job string, timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	expr := fmt.Sprintf(`max(up{job=%q})`, job)
	if err := pc.WaitUntil(ctx, expr, 500*time.Millisecond, func(v float64) bool { return v == 1 }); err != nil {
		return fmt.Errorf("Prometheus could not scrape %s within %s", job, timeout)
	}
	return nil
}

// promMeter is the Meter backed by Prometheus and cAdvisor.
type promMeter struct{ c *prom.Client }

func (m promMeter) WaitSeen(ctx context.Context, containerID string, timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	expr := fmt.Sprintf(`count(container_cpu_usage_seconds_total{id=~".*%s.*"})`, containerID)
	if err := m.c.WaitUntil(ctx, expr, 250*time.Millisecond, func(v float64) bool { return v > 0 }); err != nil {
		return fmt.Errorf("cAdvisor did not report container %.12s within %s", containerID, timeout)
	}
	return nil
}

func (m promMeter) Usage(ctx context.Context, service string, start, end time.Time) (containerUsage, error) {
	return measureContainer(ctx, m.c, service, start, end)
}

// missingTools says, per tool, why its program is not in this machine's images: the runs that
// need it then fail at once with that reason, and the rest of the scenario goes on.
func missingTools(set images.Set) map[string]string {
	out := map[string]string{}
	for _, name := range tool.Names() {
		c, _ := toolCapabilities(name)
		img, ok := set[c.Image]
		switch {
		case !ok:
		case !set.Available(c.Image):
			out[name] = fmt.Sprintf("its image %s is unavailable: %s", c.Image, img.Note)
		case c.ImageVariant != "" && img.Variant != c.ImageVariant:
			out[name] = fmt.Sprintf("this machine's %s image has no %s (%s)", c.Image, c.ImageVariant, img.Note)
		}
	}
	return out
}
