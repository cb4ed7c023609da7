// Package equalload is latency at equal load: it derives the open-model rates at which every
// protocol of a step is held (a share of the capacity the slowest of them reached earlier in the
// same run), and gathers what those runs measured into one table. A closed loop at a fixed
// number in flight cannot compare latencies (its mean is in-flight / throughput, Little's law);
// the same offered rate for every protocol can.
package equalload

import (
	"fmt"
	"math"
	"sort"
	"strings"

	"github.com/protobench/protobench/internal/record"
	"github.com/protobench/protobench/internal/stats"
)

// Capacity is what one target reached in the capacity step: the median throughput of its
// usable repeats.
type Capacity struct {
	Target string
	RPS    float64
	N      int // repeats the median is over
}

// usable says whether a capacity-step record can set a rate: it measured, and its throughput is
// the server's (no failed requests beyond the errors mark, no tool at its own cap).
func usable(r record.Record) bool {
	return r.Valid() && r.ThroughputRPS > 0 && !r.HasFlag(record.FlagErrors) && !r.HasFlag(record.FlagClientBound)
}

// Capacities returns each target's capacity in step from recs (tool "" takes any tool), in the
// order of targets; an error names the targets without a usable record.
func Capacities(recs []record.Record, step, tool string, targets []string) ([]Capacity, error) {
	var out []Capacity
	var missing []string
	for _, t := range targets {
		var xs []float64
		for _, r := range recs {
			if r.Step == step && r.Target == t && (tool == "" || r.Tool == tool) && usable(r) {
				xs = append(xs, r.ThroughputRPS)
			}
		}
		if len(xs) == 0 {
			missing = append(missing, t)
			continue
		}
		out = append(out, Capacity{Target: t, RPS: stats.Median(xs), N: len(xs)})
	}
	if len(missing) > 0 {
		return out, fmt.Errorf("step %s measured no usable capacity for %s in this run (it did not run, failed, or was flagged errors or client-bound): run it too, or give the step fixed rates (rate or matrix.rate)", step, strings.Join(missing, ", "))
	}
	return out, nil
}

// Rate is percent % of the slowest capacity, rounded to a whole request per second, with the
// capacity it came from.
func Rate(caps []Capacity, percent float64) (rate float64, slowest Capacity, err error) {
	if len(caps) == 0 {
		return 0, Capacity{}, fmt.Errorf("no capacity to derive a rate from")
	}
	if !(percent > 0 && percent <= 100) {
		return 0, Capacity{}, fmt.Errorf("load percent %v: expected more than 0 and at most 100", percent)
	}
	slowest = caps[0]
	for _, c := range caps[1:] {
		if c.RPS < slowest.RPS {
			slowest = c
		}
	}
	rate = math.Round(slowest.RPS * percent / 100)
	if rate < 1 {
		rate = 1
	}
	return rate, slowest, nil
}

// Cell is what one target measured at one load: medians over its repeats.
type Cell struct {
	Target         string
	N              int     // repeats behind the medians
	AchievedRPS    float64 // successful requests per second
	P50, P99, P999 float64 // ms, from the intended send time
	CPUMicros      float64 // server container CPU µs per request
	CoreMicros     float64 // server cores' busy µs per request (0 when not measured)
	Incomplete     int64   // summed over the repeats
	Flags          []string
}

// Row is one offered load: the rate every target was held at.
type Row struct {
	Step        string // variant name, e.g. equal-load-load50
	LoadPercent float64
	Rate        float64
	CapacityRPS float64
	// CapacityStep is the step whose slowest target's capacity the rate is a share of.
	CapacityStep string
	Cells        []Cell // in the order targets first appear
}

// Table gathers the equal-load runs among recs (those with a LoadPercent), one row per step
// variant in order of load, cells in the order targets first appear. When our own generator ran
// any of them, the table is its runs only: other tools' runs at the same loads are witnesses
// (Witnesses), not rows of the comparison.
func Table(recs []record.Record) []Row {
	recs = primaryOnly(recs)
	type key struct{ step, target string }
	byCell := map[key][]record.Record{}
	rows := map[string]*Row{}
	var order []string
	var targets []string
	for _, r := range recs {
		if r.LoadPercent <= 0 || r.Model != "open" {
			continue
		}
		if _, ok := rows[r.Step]; !ok {
			rows[r.Step] = &Row{Step: r.Step, LoadPercent: r.LoadPercent}
			order = append(order, r.Step)
		}
		row := rows[r.Step]
		if r.Rate > 0 {
			row.Rate, row.CapacityRPS = r.Rate, r.CapacityRPS
		}
		if r.CapacityStep != "" {
			row.CapacityStep = r.CapacityStep
		}
		if !contains(targets, r.Target) {
			targets = append(targets, r.Target)
		}
		byCell[key{r.Step, r.Target}] = append(byCell[key{r.Step, r.Target}], r)
	}
	var out []Row
	for _, step := range order {
		row := rows[step]
		for _, t := range targets {
			rs := byCell[key{step, t}]
			if len(rs) == 0 {
				continue
			}
			row.Cells = append(row.Cells, cell(t, rs))
		}
		out = append(out, *row)
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].LoadPercent < out[j].LoadPercent })
	return out
}

func cell(target string, rs []record.Record) Cell {
	c := Cell{Target: target}
	var rps, p50, p99, p999, cpu, core []float64
	for _, r := range rs {
		for _, f := range r.Flags {
			if !contains(c.Flags, f) {
				c.Flags = append(c.Flags, f)
			}
		}
		c.Incomplete += r.Incomplete
		if !r.Valid() {
			continue
		}
		c.N++
		rps = append(rps, r.ThroughputRPS)
		p50 = append(p50, r.LatencyMs.P50)
		p99 = append(p99, r.LatencyMs.P99)
		p999 = append(p999, r.LatencyMs.P999)
		if r.CPUMicrosPerRequest > 0 {
			cpu = append(cpu, r.CPUMicrosPerRequest)
		}
		if r.ServerCoreMicrosPerRequest > 0 {
			core = append(core, r.ServerCoreMicrosPerRequest)
		}
	}
	med := func(xs []float64) float64 {
		if len(xs) == 0 {
			return 0
		}
		return stats.Median(xs)
	}
	c.AchievedRPS, c.P50, c.P99, c.P999 = med(rps), med(p50), med(p99), med(p999)
	c.CPUMicros, c.CoreMicros = med(cpu), med(core)
	sort.Strings(c.Flags)
	return c
}

func contains(xs []string, x string) bool {
	for _, y := range xs {
		if y == x {
			return true
		}
	}
	return false
}
