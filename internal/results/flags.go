package results

import (
	"fmt"
	"sort"

	"github.com/protobench/protobench/internal/record"
	"github.com/protobench/protobench/internal/stats"
)

// Thresholds behind the validity flags.
const (
	ErrorFractionMax = 0.01 // more failed requests than this flags "errors"
	RateMetMin       = 0.95 // achieving less than this share of the target rate flags "rate-not-met"
	NoisyCVMax       = 0.10 // a throughput CV across repeats above this flags "noisy"
	// SaturatedPercent is the share of its CPU cap at which a side counts as the bottleneck; a
	// closed-loop step where neither side reaches it flags "unsaturated".
	SaturatedPercent = 90
	// BusyHostPercent is the share of the server's or the tool's cores that processes other
	// than ours may use in a run's window before it is flagged "busy-host". A process taking
	// 10 % of the server's core can take about as much of its throughput: the size of the
	// spread the noisy flag calls noise (NoisyCVMax), and so the least that compare could
	// mistake for a difference. A quiet host stays well below it (docs/testing.md has the
	// figures): dockerd, containerd's shims and the runner's docker calls take a few percent.
	BusyHostPercent = 10
)

// flagOrder is the order flags print in: the ones that invalidate a number first.
var flagOrder = map[string]int{
	record.FlagFailed: 0, record.FlagErrors: 1, record.FlagCountMismatch: 2, record.FlagRateNotMet: 3, record.FlagClientBound: 4, record.FlagClientLatency: 5, record.FlagThrottled: 6, record.FlagUnsaturated: 7, record.FlagBusyHost: 8, record.FlagNoisy: 9,
	record.FlagSMTShared: 10, record.FlagMixedCores: 11, record.FlagClockDrop: 12,
}

// ApplyFlags sets the flags that follow from the records themselves: errors, rate-not-met and
// client-latency from each record's own fields, noisy across the repeats of one step, target
// and tool. It recomputes those, so calling it again after more repeats arrive is safe, and it keeps
// the flags the runner sets from Prometheus (client-bound, throttled) and failed untouched.
func ApplyFlags(recs []record.Record) {
	drops := clockDrops(recs)
	for i := range recs {
		r := &recs[i]
		r.Flags = without(r.Flags, record.FlagErrors, record.FlagRateNotMet, record.FlagNoisy, record.FlagUnsaturated, record.FlagBusyHost, record.FlagClientLatency, record.FlagClockDrop)
		if !r.Valid() {
			continue
		}
		if record.ClientLatency(*r) {
			r.Flags = append(r.Flags, record.FlagClientLatency)
		}
		if drops[i] {
			r.Flags = append(r.Flags, record.FlagClockDrop)
		}
		if BusyHost(*r) {
			r.Flags = append(r.Flags, record.FlagBusyHost)
		}
		if r.ErrorFraction() > ErrorFractionMax {
			r.Flags = append(r.Flags, record.FlagErrors)
		}
		if r.Model == "open" && r.Rate > 0 && achieved(*r) < RateMetMin*r.Rate {
			r.Flags = append(r.Flags, record.FlagRateNotMet)
		}
		if unsaturated(*r) {
			r.Flags = append(r.Flags, record.FlagUnsaturated)
		}
	}
	groups := map[groupKey][]int{}
	for i, r := range recs {
		if r.Valid() {
			k := keyOf(r)
			groups[k] = append(groups[k], i)
		}
	}
	for _, idx := range groups {
		xs := make([]float64, len(idx))
		for j, i := range idx {
			xs[j] = recs[i].ThroughputRPS
		}
		if len(xs) >= 2 && stats.CV(xs) > NoisyCVMax {
			for _, i := range idx {
				recs[i].Flags = append(recs[i].Flags, record.FlagNoisy)
			}
		}
	}
	for i := range recs {
		sortFlags(recs[i].Flags)
	}
}

// unsaturated reports a closed-loop record whose server and client both stayed below
// SaturatedPercent of their CPU caps, while the server's cores, where the record says how they
// spent the window, were busy (user, system, softirq and irq, less the observability stack's
// CPU when it shared them; never steal, iowait or nice) less than SaturatedPercent of it. Then the step's in-flight
// requests, not either side's capacity, set the throughput, and the figure is a round-trip
// measurement. A server core busy beyond SaturatedPercent is full even when the container's
// own share is lower: the kernel's packet work on that core (softirq) is not all charged to the
// container. Both CPU figures must be known: a record without them (Prometheus had no samples)
// proves nothing either way.
func unsaturated(r record.Record) bool {
	if r.Model == "open" || r.ServerCPUPercentOfCap <= 0 || r.ClientCPUPercentOfCap <= 0 {
		return false
	}
	if c := r.ServerCores; c != nil && c.Busy() >= SaturatedPercent {
		return false
	}
	return r.ServerCPUPercentOfCap < SaturatedPercent && r.ClientCPUPercentOfCap < SaturatedPercent
}

// achieved is the rate a record's tool sent at: every completed request, failed ones too
// (ThroughputRPS counts successes only; a failing server is "errors", not "rate-not-met").
func achieved(r record.Record) float64 {
	if r.DurationS > 0 && r.Requests > 0 {
		return float64(r.Requests) / r.DurationS
	}
	return r.ThroughputRPS
}

// groupKey identifies the repeats of one measurement.
type groupKey struct {
	Scenario, Step, Target, Tool string
}

func keyOf(r record.Record) groupKey {
	return groupKey{r.Scenario, r.Step, r.Target, r.Tool}
}

func without(flags []string, drop ...string) []string {
	out := flags[:0:0]
	for _, f := range flags {
		keep := true
		for _, d := range drop {
			if f == d {
				keep = false
			}
		}
		if keep && !contains(out, f) {
			out = append(out, f)
		}
	}
	return out
}

func sortFlags(flags []string) {
	sort.SliceStable(flags, func(i, j int) bool {
		oi, iok := flagOrder[flags[i]]
		oj, jok := flagOrder[flags[j]]
		switch {
		case iok && jok:
			return oi < oj
		case iok != jok:
			return iok
		}
		return flags[i] < flags[j]
	})
}

func contains(xs []string, x string) bool {
	for _, y := range xs {
		if y == x {
			return true
		}
	}
	return false
}

// BusyHost reports a record during whose window processes other than ours used
// BusyHostPercent or more of the server's or the tool's cores.
func BusyHost(r record.Record) bool {
	for _, ct := range []*record.CoreTime{r.ServerCores, r.ClientCores} {
		if ct != nil && ct.OthersPercent != nil && *ct.OthersPercent >= BusyHostPercent {
			return true
		}
	}
	return false
}

// BusyHostLine says how many of the records ran beside other processes (busy-host) and the
// most those took of a side's cores; "" when none did.
func BusyHostLine(recs []record.Record) string {
	n, valid := 0, 0
	var most float64
	for _, r := range recs {
		if !r.Valid() {
			continue
		}
		valid++
		if !BusyHost(r) {
			continue
		}
		n++
		for _, ct := range []*record.CoreTime{r.ServerCores, r.ClientCores} {
			if ct != nil && ct.OthersPercent != nil {
				most = max(most, *ct.OthersPercent)
			}
		}
	}
	if n == 0 {
		return ""
	}
	return fmt.Sprintf("%d of %d runs are busy-host: processes other than the run's own used %d %% or more of the server's or the tool's cores (up to %.0f %%); their figures measure the machine's other load as well",
		n, valid, BusyHostPercent, most)
}
