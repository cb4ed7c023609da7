package results

import (
	"sort"

	"github.com/protobench/protobench/internal/stats"
)

// Thresholds behind the validity flags.
const (
	ErrorFractionMax = 0.01 // more failed requests than this flags "errors"
	RateMetMin       = 0.95 // achieving less than this share of the target rate flags "rate-not-met"
	NoisyCVMax       = 0.10 // a throughput CV across repeats above this flags "noisy"
)

// flagOrder is the order flags print in: the ones that invalidate a number first.
var flagOrder = map[string]int{
	FlagFailed: 0, FlagErrors: 1, FlagRateNotMet: 2, FlagClientBound: 3, FlagThrottled: 4, FlagNoisy: 5,
}

// Valid reports whether a record holds a measurement (it did not fail).
func (r Record) Valid() bool {
	return r.Error == "" && !r.HasFlag(FlagFailed)
}

// HasFlag reports whether the record carries flag.
func (r Record) HasFlag(flag string) bool {
	for _, f := range r.Flags {
		if f == flag {
			return true
		}
	}
	return false
}

// ErrorFraction is the share of requests that failed. Requests counts every completed request,
// failed ones included; if a tool reported fewer requests than errors, the two are added.
func (r Record) ErrorFraction() float64 {
	switch {
	case r.Errors <= 0:
		return 0
	case r.Requests >= r.Errors && r.Requests > 0:
		return float64(r.Errors) / float64(r.Requests)
	}
	return float64(r.Errors) / float64(r.Requests+r.Errors)
}

// ApplyFlags sets the flags that follow from the records themselves: errors and rate-not-met
// from each record's own fields, noisy across the repeats of one step, target and tool. It
// recomputes those three, so calling it again after more repeats arrive is safe, and it keeps
// the flags the runner sets from Prometheus (client-bound, throttled) and failed untouched.
func ApplyFlags(recs []Record) {
	for i := range recs {
		r := &recs[i]
		r.Flags = without(r.Flags, FlagErrors, FlagRateNotMet, FlagNoisy)
		if !r.Valid() {
			continue
		}
		if r.ErrorFraction() > ErrorFractionMax {
			r.Flags = append(r.Flags, FlagErrors)
		}
		if r.Model == "open" && r.Rate > 0 && r.ThroughputRPS < RateMetMin*r.Rate {
			r.Flags = append(r.Flags, FlagRateNotMet)
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
				recs[i].Flags = append(recs[i].Flags, FlagNoisy)
			}
		}
	}
	for i := range recs {
		sortFlags(recs[i].Flags)
	}
}

// groupKey identifies the repeats of one measurement.
type groupKey struct {
	Scenario, Step, Target, Tool string
}

func keyOf(r Record) groupKey {
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
