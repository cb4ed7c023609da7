package runner

import (
	"bytes"
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/protobench/protobench/internal/doctor"
	"github.com/protobench/protobench/internal/scenario"
)

// preflightLoad is how long a run's pre-flight samples the other load on its cores: long
// enough to catch a build, short beside the run.
const preflightLoad = time.Second

// preflight is the pre-flight check at the start of a run (protobench doctor, without the
// registry probe: the image step makes it): it prints its lines and returns them for run.json.
// It warns and never stops the run.
func preflight(ctx context.Context, opts Options, plan *scenario.Plan, choice engineChoice) []string {
	if !choice.hostCores {
		// On a swarm the cores, power and disk that matter are the nodes', not this host's.
		return nil
	}
	lines := doctor.Check(ctx, doctor.Options{Layout: plan.Layout, Docker: opts.Docker, RepoRoot: opts.RepoRoot, LoadSample: preflightLoad})
	var buf bytes.Buffer
	doctor.Print(&buf, lines)
	fmt.Fprintf(opts.Stdout, "protobench: pre-flight (./run.sh doctor for the full check):\n%s", buf.String())
	var out []string
	for _, l := range lines {
		s := l.Topic + ": " + l.Text
		if l.Warn {
			s = "WARN " + s + " (fix: " + l.Fix + ")"
		}
		out = append(out, strings.TrimSpace(s))
	}
	return out
}
