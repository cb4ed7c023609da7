package protobenchtool

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/protobench/protobench/internal/loadgen"
	"github.com/protobench/protobench/internal/record"
	"github.com/protobench/protobench/internal/tool"
)

// A step shared by several client nodes runs one generator per part of tool.Split(inv, n); part
// k writes <RawPrefix>.part<k>.json and <RawPrefix>.part<k>.timeseries.json. The functions
// here read those files, keyed by base name in tool.Raw.Files as for a single run, and merge
// them (loadgen.Merge, loadgen.MergeTimeseries) into what one generator running the whole step
// would have written.

// ParseParts implements tool.PartsMerger, which Capabilities declares (see the package function
// ParseParts).
func (Adapter) ParseParts(inv tool.Invocation, n int, raw tool.Raw) (record.Record, error) {
	return ParseParts(inv, n, raw)
}

// MergedFiles implements tool.PartsMerger (see the package function MergedFiles).
func (Adapter) MergedFiles(inv tool.Invocation, n int, raw tool.Raw) (map[string][]byte, error) {
	return MergedFiles(inv, n, raw)
}

var _ tool.PartsMerger = Adapter{}

// ParseParts is Parse for a step split into n parts: the record of the merged result. inv is
// the step's invocation, the one tool.Split divided (not a part). Every part must have written
// its result: a step measured on part of its load is not the step. A part's own error (a lost
// connection, an aborted run) stays in the merged record's error, with its part named.
func ParseParts(inv tool.Invocation, n int, raw tool.Raw) (record.Record, error) {
	res, err := MergeParts(inv, n, raw)
	if err != nil {
		return record.Record{}, err
	}
	return recordOf(res), nil
}

// MergeParts reads the n parts' result files from raw.Files and merges them.
func MergeParts(inv tool.Invocation, n int, raw tool.Raw) (*loadgen.Result, error) {
	if n < 1 {
		return nil, fmt.Errorf("protobench: %d parts to merge", n)
	}
	parts := make([]*loadgen.Result, n)
	var missing []string
	for k := range parts {
		name := ResultFile(part(inv, k+1))
		b, ok := raw.Files[name]
		if !ok {
			missing = append(missing, name)
			continue
		}
		res, err := Decode(bytes.NewReader(b))
		if err != nil {
			return nil, fmt.Errorf("%s: %v", name, err)
		}
		parts[k] = res
	}
	if len(missing) > 0 {
		return nil, fmt.Errorf("protobench: %d of %d parts wrote no result (%v; last words: %q)", len(missing), n, missing, tool.LastLine(raw.Stderr))
	}
	return loadgen.Merge(parts)
}

// MergePartsTimeseries reads the n parts' timelines from raw.Files and merges them. A part
// without a timeline (a generator that failed before writing it) makes the merged timeline
// missing too, reported as ErrNoTimeseries, since a timeline of some parts would show a
// fraction of the load.
func MergePartsTimeseries(inv tool.Invocation, n int, raw tool.Raw) (*record.Timeseries, error) {
	parts := make([]*record.Timeseries, n)
	for k := range parts {
		name := TimeseriesFile(part(inv, k+1))
		b, ok := raw.Files[name]
		if !ok {
			return nil, fmt.Errorf("%w: %s", ErrNoTimeseries, name)
		}
		ts, err := record.DecodeTimeseries(bytes.NewReader(b))
		if err != nil {
			return nil, fmt.Errorf("%s: %v", name, err)
		}
		parts[k] = ts
	}
	return loadgen.MergeTimeseries(parts)
}

// ErrNoTimeseries is MergePartsTimeseries's error when a part wrote no timeline.
var ErrNoTimeseries = errors.New("a part wrote no timeline")

// MergedFiles is the merged result and timeline of a step split into n parts, encoded as the
// files a single generator would have written for inv (ResultFile(inv) and TimeseriesFile(inv),
// keyed by base name). A runner that writes them into the raw folder beside the parts' files
// gives the report and Parse the whole step's figures where they look for a single run's. The
// timeline is left out when a part wrote none.
func MergedFiles(inv tool.Invocation, n int, raw tool.Raw) (map[string][]byte, error) {
	res, err := MergeParts(inv, n, raw)
	if err != nil {
		return nil, err
	}
	out := map[string][]byte{}
	if out[ResultFile(inv)], err = json.MarshalIndent(res, "", "  "); err != nil {
		return nil, err
	}
	ts, err := MergePartsTimeseries(inv, n, raw)
	switch {
	case errors.Is(err, ErrNoTimeseries):
	case err != nil:
		return nil, err
	default:
		if out[TimeseriesFile(inv)], err = json.MarshalIndent(ts, "", "  "); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// countParts is how many consecutive parts, from the first, wrote a result file: what Parse
// merges when it finds parts' files and no single result.
func countParts(inv tool.Invocation, raw tool.Raw) int {
	n := 0
	for {
		if _, ok := raw.Files[ResultFile(part(inv, n+1))]; !ok {
			return n
		}
		n++
	}
}

// part is the invocation of part k as tool.Split names its files; only RawPrefix matters here.
func part(inv tool.Invocation, k int) tool.Invocation {
	inv.RawPrefix = tool.PartPrefix(inv.RawPrefix, k)
	return inv
}
