package equalload

import (
	"math"
	"sort"

	"github.com/protobench/protobench/internal/record"
)

// Primary is the tool whose equal-load runs are the comparison between protocols: our own
// generator, the same client architecture for every protocol.
const Primary = "protobench"

// Agreement margins: two tools agree on a percentile when they are within AgreeFraction of the
// larger of the two, or within AgreeFloorMs. A fifth is issue 36's target for our p50 beside an
// independent tool's at 25 % load, and the share of p99 our generator's own lag may reach before
// its record is flagged client-latency (record.ClientLatencyFraction). The absolute floor keeps
// sub-millisecond medians, where 0.1 ms is half, from disagreeing on wake-up noise that
// neither client resolves.
const (
	AgreeFraction = 0.2
	AgreeFloorMs  = 0.1
)

// Witness is one target at one load, measured by our generator and by a cross-check tool with
// an open model of its own (k6's constant-arrival-rate executor).
type Witness struct {
	LoadPercent float64
	Rate        float64
	Target      string
	Tool        string // the witness
	Ours        Cell
	Theirs      Cell
	// Verdict is "agree", "disagree" or "no verdict"; Why says why when it is not "agree".
	Verdict string
	Why     string
}

// Verdicts of a Witness.
const (
	VerdictAgree     = "agree"
	VerdictDisagree  = "disagree"
	VerdictNoVerdict = "no verdict"
)

// Witnesses pairs our generator's equal-load cells with every other tool's at the same load
// percentage and target, in order of load, then target, then tool.
func Witnesses(recs []record.Record) []Witness {
	type key struct {
		load         float64
		target, tool string
	}
	by := map[key][]record.Record{}
	rates := map[float64]float64{}
	for _, r := range recs {
		if r.LoadPercent <= 0 || r.Model != "open" {
			continue
		}
		k := key{r.LoadPercent, r.Target, r.Tool}
		by[k] = append(by[k], r)
		if r.Tool == Primary && r.Rate > 0 {
			rates[r.LoadPercent] = r.Rate
		}
	}
	var out []Witness
	for k, rs := range by {
		if k.tool == Primary {
			continue
		}
		ours := by[key{k.load, k.target, Primary}]
		if len(ours) == 0 {
			continue
		}
		w := Witness{LoadPercent: k.load, Rate: rates[k.load], Target: k.target, Tool: k.tool,
			Ours: cell(k.target, ours), Theirs: cell(k.target, rs)}
		w.Verdict, w.Why = judge(w.Ours, w.Theirs, k.tool)
		out = append(out, w)
	}
	sort.Slice(out, func(i, j int) bool {
		a, b := out[i], out[j]
		if a.LoadPercent != b.LoadPercent {
			return a.LoadPercent < b.LoadPercent
		}
		if a.Target != b.Target {
			return a.Target < b.Target
		}
		return a.Tool < b.Tool
	})
	return out
}

// spoilers are the flags under which a cell's percentiles are not a measurement of the load
// it was meant to offer.
var spoilers = []string{record.FlagFailed, record.FlagErrors, record.FlagRateNotMet, record.FlagClientBound, record.FlagIncomplete}

func judge(ours, theirs Cell, tool string) (string, string) {
	if ours.N == 0 || theirs.N == 0 {
		return VerdictNoVerdict, "a side has no valid run"
	}
	for _, c := range []struct {
		who  string
		cell Cell
	}{{Primary, ours}, {tool, theirs}} {
		for _, f := range spoilers {
			if contains(c.cell.Flags, f) {
				return VerdictNoVerdict, c.who + " was " + f
			}
		}
	}
	var apart []string
	if !Agree(ours.P50, theirs.P50) {
		apart = append(apart, "p50")
	}
	if !Agree(ours.P99, theirs.P99) {
		apart = append(apart, "p99")
	}
	if len(apart) == 0 {
		return VerdictAgree, ""
	}
	why := apart[0]
	if len(apart) == 2 {
		why += " and " + apart[1]
	}
	return VerdictDisagree, why + " apart by more than the margin"
}

// Agree reports whether two latencies in ms are within the margin: AgreeFraction of the larger,
// or AgreeFloorMs.
func Agree(a, b float64) bool {
	d := math.Abs(a - b)
	return d <= AgreeFloorMs || d <= AgreeFraction*math.Max(a, b)
}

// primaryOnly is recs without other tools' equal-load runs when our generator ran some.
func primaryOnly(recs []record.Record) []record.Record {
	has := false
	for _, r := range recs {
		if r.LoadPercent > 0 && r.Tool == Primary {
			has = true
			break
		}
	}
	if !has {
		return recs
	}
	out := make([]record.Record, 0, len(recs))
	for _, r := range recs {
		if r.LoadPercent <= 0 || r.Tool == Primary {
			out = append(out, r)
		}
	}
	return out
}
