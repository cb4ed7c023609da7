package results

import (
	"fmt"

	"github.com/protobench/protobench/internal/record"
)

// clockDrops marks the records whose server's or tool's lowest clock in the window fell more
// than record.ClockDropFraction below the highest clock any record of the run saw on that
// side's cores: a laptop that heats up over a long run, goes on battery, or a governor that
// lowers the clock between steps. A side whose clock no record knows flags nothing.
func clockDrops(recs []record.Record) []bool {
	var top [2]float64
	side := func(r record.Record, i int) *record.Frequency {
		if r.Clock == nil {
			return nil
		}
		return [2]*record.Frequency{r.Clock.Server, r.Clock.Client}[i]
	}
	for _, r := range recs {
		for i := range top {
			if f := side(r, i); r.Valid() && f != nil {
				top[i] = max(top[i], f.Max)
			}
		}
	}
	out := make([]bool, len(recs))
	for j, r := range recs {
		for i := range top {
			if f := side(r, i); r.Valid() && f != nil && top[i] > 0 && f.Min < (1-record.ClockDropFraction)*top[i] {
				out[j] = true
			}
		}
	}
	return out
}

// Legends of the placement and clock flags (record/placement.go), each with what to do.
var (
	legendSMTShared = "server and load tool shared a physical core (SMT siblings, or one CPU): the host had no two cores for them, or --force-layout kept a scenario's layout on siblings. " +
		"Each side's figures include the other's work; run on a host with two physical cores or more, or give each whole cores of its own (run.json's cpu_layout.Reason says what was chosen)"
	legendMixedCores = "server and load tool sat on cores of different kinds (performance and efficiency) or NUMA nodes, since no kind on one node had two cores: the comparison between targets holds, but the absolute figures depend on the core each side drew"
	legendClockDrop  = fmt.Sprintf("the server's or the tool's cores ran more than %.0f %% below the highest clock the run saw on them (the record's clock: min, mean, max MHz): thermal throttling, battery, or a power-saving governor. "+
		"Plug the machine in, set the governor to performance (sudo cpupower frequency-set -g performance), let it cool, and run again", record.ClockDropFraction*100)
)
