// Package doctor is the pre-flight check (`protobench doctor`, and briefly at the start of every
// run): in a few lines, the CPU layout and why, the power source and governor, the other load on
// the cores, free disk for the images, Docker's CPU and memory, and whether a registry answers.
// It warns where the figures will not be worth quoting, with the fix, and never refuses.
package doctor

import (
	"context"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/protobench/protobench/internal/hostclock"
	"github.com/protobench/protobench/internal/results"
	"github.com/protobench/protobench/internal/scenario"
)

// Line is one finding: a topic, what was found, and, for a warning, the fix.
type Line struct {
	Topic string
	Text  string
	Warn  bool
	Fix   string
}

// Options say what to check and where.
type Options struct {
	Layout   scenario.Layout // the layout the run would use (its Topology and Reason)
	Root     string          // the root sysfs and /proc are read under ("" means /)
	Docker   string          // the docker CLI ("" means docker)
	RepoRoot string          // where free disk is measured when Docker's own root is not here
	// LoadSample is how long the other load on the cores is sampled; 0 skips that line.
	LoadSample time.Duration
	// Registry probes the registry (a pull of the base image, up to RegistryTimeout); a run
	// skips it, since its image step does the same.
	Registry        bool
	RegistryTimeout time.Duration
}

// Check runs every check and returns its lines in a fixed order.
func Check(ctx context.Context, o Options) []Line {
	if o.Root == "" {
		o.Root = "/"
	}
	if o.Docker == "" {
		o.Docker = "docker"
	}
	lines := []Line{layoutLine(o.Layout), powerLine(o)}
	if o.LoadSample > 0 {
		lines = append(lines, loadLine(ctx, o))
	}
	hostCPUs := 0
	if o.Layout.Topology != nil {
		hostCPUs = len(o.Layout.Topology.CPUs)
	}
	info, infoErr := dockerInfo(ctx, o.Docker)
	lines = append(lines, diskLine(o, info, infoErr), dockerLine(info, infoErr, hostCPUs))
	if o.Registry {
		lines = append(lines, registryLine(ctx, o))
	}
	return lines
}

// Print writes the lines, each warning followed by its fix, and returns how many warned.
func Print(w io.Writer, lines []Line) int {
	warned := 0
	for _, l := range lines {
		mark := "ok  "
		if l.Warn {
			mark = "WARN"
			warned++
		}
		fmt.Fprintf(w, "  %s %-9s %s\n", mark, l.Topic+":", l.Text)
		if l.Warn && l.Fix != "" {
			fmt.Fprintf(w, "       %-9s fix: %s\n", "", l.Fix)
		}
	}
	if warned > 0 {
		fmt.Fprintf(w, "  %d warning(s): the run goes on, but figures measured so are not worth quoting until they are fixed\n", warned)
	}
	return warned
}

func layoutLine(l scenario.Layout) Line {
	line := Line{Topic: "layout", Text: fmt.Sprintf("server CPUs %s, client CPUs %s, observability CPUs %s; %s",
		l.ServerCPUSet, l.ClientCPUSet, l.ObservabilityCPUSet, l.Reason)}
	if len(l.Flags) > 0 {
		line.Warn = true
		line.Text += fmt.Sprintf(" (every record flagged %s)", strings.Join(l.Flags, ", "))
		line.Fix = "run on a machine with two physical cores or more of one kind (in Docker Desktop: Settings → Resources → CPUs 4 or more), or drop the scenario's layout override"
	}
	return line
}

func powerLine(o Options) Line {
	cpus, _ := scenario.ParseCPUSet(o.Layout.ServerCPUSet + "," + o.Layout.ClientCPUSet)
	power, governor, notes := hostclock.Describe(o.Root, cpus)
	var parts, fixes []string
	line := Line{Topic: "power"}
	if power != "" {
		parts = append(parts, "on "+power)
		if power == "battery" {
			line.Warn = true
			fixes = append(fixes, "plug in: on battery the clock drops and wanders")
		}
	}
	if governor != "" {
		parts = append(parts, "governor "+governor)
		if governor != "performance" {
			line.Warn = true
			fixes = append(fixes, "set the governor to performance (sudo cpupower frequency-set -g performance), and back afterwards")
		}
	}
	parts = append(parts, notes...)
	line.Text = strings.Join(parts, "; ")
	line.Fix = strings.Join(fixes, "; ")
	return line
}

func loadLine(ctx context.Context, o Options) Line {
	cpus := o.Layout.ServerCPUSet + "," + o.Layout.ClientCPUSet
	busy, err := OtherLoad(ctx, o.Root, cpus, o.LoadSample)
	if err != nil {
		return Line{Topic: "load", Text: "not available: " + err.Error()}
	}
	line := Line{Topic: "load", Text: fmt.Sprintf("%.0f %% of the server's and client's CPUs (%s) busy with other processes over %s (busy-host flags a run from %d %%)",
		busy, cpus, o.LoadSample, results.BusyHostPercent)}
	if busy >= results.BusyHostPercent {
		line.Warn = true
		line.Fix = "close the build, the browser or whatever `top` shows on those CPUs, then run"
	}
	return line
}
