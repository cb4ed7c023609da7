package measure

import (
	"context"
	"time"

	"github.com/protobench/protobench/internal/hostclock"
	"github.com/protobench/protobench/internal/scenario"
)

// Measurer takes one run after another's figures around their tools. It is not safe for
// concurrent use: runs are measured one at a time.
type Measurer struct {
	Meter Meter
	// Settle is how long Prometheus may take, after the window's end, to store the samples
	// that cover it (a scrape plus cAdvisor's housekeeping); the wait is bounded by it plus 2 s.
	Settle time.Duration
	// HostCores says the layout's cpusets are cores of this host (engine.Capabilities), so that
	// the host's per-core time describes the server's and the tools' cores.
	HostCores bool
	// Placer moves the observability stack (the services Observability) to where each run
	// wants it (Layout.StackCPUSet); nil where the stack cannot be moved (swarm sets no
	// cpusets).
	Placer        Placer
	Layout        scenario.Layout
	Observability []string
	Log           func(format string, args ...any)
	// Clock samples the cores' frequency from sysfs where node-exporter has no cpufreq series
	// (nil where the host has no cpufreq either); SysRoot is the sysfs root the governor and
	// power source are read under ("" means /).
	Clock   *hostclock.Sampler
	SysRoot string

	// stackAt is where the stack sits now. It starts unknown: a stack kept up by an earlier run
	// (--keep-up) may sit where that run last moved it, and compose does not see a docker
	// update as a change.
	stackAt string
	// lastUsage is what each cell's latest repeat measured, so that its next repeat places the
	// stack by what the tool did rather than by what the tool declares.
	lastUsage map[cellKey]cellUsage
}

// Placer moves containers between cores (engine.Engine.PlaceStack).
type Placer interface {
	PlaceStack(ctx context.Context, services []string, cpuset string) error
}

// containerSeenTimeout bounds the wait for cAdvisor to report a new container; it does so within
// a couple of housekeeping intervals (1 s) plus a scrape (1 s) when healthy.
const containerSeenTimeout = 20 * time.Second

// overlapSeenWarmup is the shortest warm-up that the wait for cAdvisor may run beside.
const overlapSeenWarmup = 2 * time.Second

// WaitSeen starts the wait until cAdvisor reports the run's fresh server (containerID of
// service), and returns the function that finishes it. cAdvisor must report the server before
// the measured window opens, or the window's first seconds lack its CPU. A warm-up of a couple
// of seconds covers the wait (a housekeeping interval plus a scrape), so the wait runs beside it
// instead of before it.
func (m *Measurer) WaitSeen(ctx context.Context, containerID, service string, r scenario.Run) (finish func()) {
	seen := make(chan error, 1)
	switch {
	case containerID == "":
		m.Log("warning: no container ID for %s: its CPU may be missing from the first seconds", service)
		seen <- nil
	case r.Warmup >= overlapSeenWarmup:
		go func() { seen <- m.Meter.WaitSeen(ctx, containerID, service, containerSeenTimeout) }()
	default:
		seen <- m.Meter.WaitSeen(ctx, containerID, service, containerSeenTimeout)
	}
	return func() {
		if err := <-seen; err != nil {
			m.Log("warning: %s: %v", r.ID, err)
		}
	}
}
