package loadgen

import (
	"slices"

	"github.com/protobench/protobench/internal/record"
)

// MergeInfo.Throughput's values.
const (
	ThroughputSumOfParts = "sum of the parts' rates (their windows coincide)"
	ThroughputOverUnion  = "total requests over the union of the parts' windows (they do not coincide: parts-apart)"
)

// mergeWindow sets the merged result's window and throughput, and how they were had (info),
// and returns the window's start. The window is the union of the parts' windows; parts that
// never measured (a failed start has an empty window at the moment it failed) do not stretch it.
//
// The throughput depends on whether the parts measured together. When their windows begin and
// end within record.PartsApartFraction (1 %) of the shortest, as those of parts given one
// shared start (--start-at) do, they measured the same interval, and the step's throughput is
// the sum of their own rates: what they offered together. Otherwise they did not carry their
// loads at once (a part started late, or they were given no shared start): the sum of their
// rates would claim a load the server never carried at once, and the total over the union of
// the windows understates what they offered by about the spread over the window (two parts
// 2.7 s apart on 5-s windows: a union of 7.7 s, over which the total is 5/7.7, two-thirds, of
// what they offered together). The result then takes the total over the union, the lower figure
// and the load the server did carry on average, and is flagged parts-apart.
func mergeWindow(parts []*Result, r *Result, info *MergeInfo, flags map[string]bool) float64 {
	starts, ends := windows(parts)
	start, end := slices.Min(starts), slices.Max(ends)
	startSpread, endSpread := slices.Max(starts)-start, end-slices.Min(ends)
	info.StartSpreadS, info.EndSpreadS = round3(startSpread), round3(endSpread)
	info.OverlapS = round3(max(0, slices.Min(ends)-slices.Max(starts)))
	info.StartAt = sharedStartAt(parts)
	r.StartUnix, r.EndUnix = start, end
	dur := end - start
	r.DurationS = round3(dur)
	shortest := ends[0] - starts[0]
	for i := range starts {
		shortest = min(shortest, ends[i]-starts[i])
	}
	tolerance := record.PartsApartFraction * shortest
	info.WindowToleranceS = round3(tolerance)
	if dur > 0 {
		if startSpread <= tolerance && endSpread <= tolerance {
			info.Throughput = ThroughputSumOfParts
			sum := 0.0
			for _, p := range parts {
				sum += p.ThroughputRPS // its successful requests over its own window
			}
			r.ThroughputRPS = round3(sum)
		} else {
			info.Throughput = ThroughputOverUnion
			r.ThroughputRPS = round3(record.SuccessRPS(r.Requests, r.Errors, dur))
			flags[record.FlagPartsApart] = true
		}
		r.ClientCPUPercent = round3(100 * r.ClientCPUSeconds / dur)
	}
	return start
}

// sharedStartAt is the shared start every part was given, or "" when they were not all given
// the same one.
func sharedStartAt(parts []*Result) string {
	for _, p := range parts[1:] {
		if p.StartAt != parts[0].StartAt {
			return ""
		}
	}
	return parts[0].StartAt
}

// windows lists the parts' measured windows, leaving out the empty windows of parts that never
// measured unless no part did.
func windows(parts []*Result) (starts, ends []float64) {
	for _, p := range parts {
		if p.EndUnix > p.StartUnix {
			starts, ends = append(starts, p.StartUnix), append(ends, p.EndUnix)
		}
	}
	if len(starts) == 0 {
		for _, p := range parts {
			starts, ends = append(starts, p.StartUnix), append(ends, p.EndUnix)
		}
	}
	return starts, ends
}
