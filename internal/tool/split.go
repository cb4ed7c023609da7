package tool

import (
	"fmt"
	"maps"
	"math"
	"strconv"
	"strings"

	"github.com/protobench/protobench/internal/record"
	"github.com/protobench/protobench/internal/targets"
)

// PartLabel is the label Split adds to each part's Labels: the part's number, 1 to n.
const PartLabel = "part"

// PartPrefix is the RawPrefix of part k (1-based) of an invocation whose RawPrefix is prefix:
// each part writes its own files, and the run's files and the parts' share the run's prefix.
func PartPrefix(prefix string, k int) string { return prefix + ".part" + strconv.Itoa(k) }

// PartsMerger merges the results of one step shared by several generators: a tool declares one
// (Capabilities.Parts) when its output keeps what a merge needs (full histograms, not
// percentiles). Other tools cannot share a step, since their percentiles would have to be
// averaged.
type PartsMerger interface {
	// ParseParts is Parse for a step split into n parts (Split(inv, n)): the record of the
	// merged result. inv is the step's invocation, not a part's; raw.Files holds every part's
	// files by base name.
	ParseParts(inv Invocation, n int, raw Raw) (record.Record, error)
	// MergedFiles are the merged result's files, named as the files a single run of inv writes
	// (keyed by base name), for the runner to keep beside the parts' files in raw/.
	MergedFiles(inv Invocation, n int, raw Raw) (map[string][]byte, error)
}

// SplitFor is Split for a tool: the parts, or why the tool cannot share this step among n
// generators (it declares no Capabilities.Parts, or CheckSplit refuses the step).
func SplitFor(a Adapter, inv Invocation, n int) ([]Invocation, error) {
	if n <= 1 {
		return []Invocation{inv}, nil
	}
	if a.Capabilities().Parts == nil {
		return nil, fmt.Errorf("%s cannot share a step among %d clients: its results cannot be merged without averaging percentiles", a.Name(), n)
	}
	if err := CheckSplit(inv, n); err != nil {
		return nil, err
	}
	return Split(inv, n), nil
}

// CheckSplit reports why the invocation cannot be shared by n load generators without changing
// the step, or nil. A step can be split when every part keeps at least one connection with at
// least one request in flight (the step's total in flight is connections × concurrency), gets
// at least one request per second in the open model, and keeps one connection per method of a
// method mix; and when its results can be added up at all: a ZeroMQ push step counts its
// requests at the server's sink, which every part would read in full.
func CheckSplit(inv Invocation, n int) error {
	if n <= 1 {
		return nil
	}
	inFlight := inv.Connections * inv.Concurrency
	switch {
	case inv.Connections < 1 || inv.Concurrency < 1:
		return fmt.Errorf("cannot split %d×%d (connections × concurrency) among %d clients: both must be at least 1", inv.Connections, inv.Concurrency, n)
	case inFlight < n:
		return fmt.Errorf("cannot split a step with %d request(s) in flight (%d connection(s) × %d) among %d clients: each needs at least one connection with one request in flight", inFlight, inv.Connections, inv.Concurrency, n)
	case inv.Model == "open" && inv.RatePerSec < float64(n):
		return fmt.Errorf("cannot split a rate of %g/s among %d clients: each needs at least 1 request per second", inv.RatePerSec, n)
	case inv.Pattern == "push":
		return fmt.Errorf("cannot split a %s push step among %d clients: its requests are counted at the server's sink, and every client would count the others' too", targets.ProtocolTitle(inv.Scheme), n)
	}
	if methods := mixMethods(inv.Method); methods > 1 {
		if least := splitConnections(inv, n)[n-1].conns; least < methods {
			return fmt.Errorf("cannot split a mix of %d methods among %d clients: a part would get %d connection(s), and a mix needs one per method", methods, n, least)
		}
	}
	return nil
}

// Split divides one step's load among n load generators (client nodes), so that together they
// offer what one generator would have. Part k (1-based) gets RawPrefix "<RawPrefix>.part<k>"
// and the label part=<k>; every other setting (method, payload, warm-up, duration) is the
// step's. Remainders go to the first parts. n <= 1 returns the invocation unchanged, and a step
// that CheckSplit refuses returns nil: call CheckSplit for the reason.
//
// The split keeps the step's requests in flight (connections × concurrency) and each part's
// topology:
//   - With at least n connections, the connections are divided and each keeps the step's
//     concurrency: 10 connections × 4 in two parts are 5 × 4 each.
//   - With fewer connections than parts, each part opens one connection and the requests in
//     flight are divided among them: a multiplexed gRPC channel of 1 connection × 100 streams
//     in two parts is 1 × 50 each. Each client node necessarily has its own channel (a TCP
//     connection cannot be shared across machines), so the honest split is one channel per
//     node carrying half the streams: the server then sees two connections instead of one,
//     and the record shows it (the merged result's connections are the parts' sum).
//
// In the open model the rate is divided as well (an integral rate in whole requests per second,
// the remainder to the first parts; a fractional one evenly), and the connections and
// concurrency as above, since they bound how many requests each part may have in flight.
func Split(inv Invocation, n int) []Invocation {
	if n <= 1 {
		return []Invocation{inv}
	}
	if CheckSplit(inv, n) != nil {
		return nil
	}
	shapes := splitConnections(inv, n)
	rates := splitRate(inv.RatePerSec, n)
	parts := make([]Invocation, n)
	for i := range parts {
		p := inv
		p.Connections, p.Concurrency = shapes[i].conns, shapes[i].conc
		if inv.Model == "open" {
			p.RatePerSec = rates[i]
		}
		p.RawPrefix = PartPrefix(inv.RawPrefix, i+1)
		p.Labels = maps.Clone(inv.Labels)
		if p.Labels == nil {
			p.Labels = map[string]string{}
		}
		p.Labels[PartLabel] = strconv.Itoa(i + 1)
		parts[i] = p
	}
	return parts
}

type shape struct{ conns, conc int }

// splitConnections is each part's connections × concurrency, the larger parts first (see Split).
func splitConnections(inv Invocation, n int) []shape {
	out := make([]shape, n)
	if inv.Connections >= n {
		for i, c := range divide(inv.Connections, n) {
			out[i] = shape{c, inv.Concurrency}
		}
		return out
	}
	for i, k := range divide(inv.Connections*inv.Concurrency, n) {
		out[i] = shape{1, k}
	}
	return out
}

// splitRate divides a rate among n parts: whole requests per second with the remainder to the
// first parts when the rate is integral, evenly otherwise.
func splitRate(rate float64, n int) []float64 {
	out := make([]float64, n)
	if rate == math.Trunc(rate) && rate < 1<<53 {
		for i, r := range divide(int(rate), n) {
			out[i] = float64(r)
		}
		return out
	}
	for i := range out {
		out[i] = rate / float64(n)
	}
	return out
}

// divide splits total into n whole shares that differ by at most one, the larger first.
func divide(total, n int) []int {
	out := make([]int, n)
	for i := range out {
		out[i] = total / n
		if i < total%n {
			out[i]++
		}
	}
	return out
}

// mixMethods is how many methods a --method value names: 1 for a single method, the number of
// "Method:weight" parts for a mix.
func mixMethods(method string) int {
	if !strings.ContainsAny(method, ":,") {
		return 1
	}
	return len(strings.Split(method, ","))
}
