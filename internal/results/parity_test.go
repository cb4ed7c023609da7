package results

import (
	"bytes"
	"math"
	"strings"
	"testing"

	"github.com/protobench/protobench/internal/record"
)

// TestUnequalWorkRatio: a step whose grpc runs gzipped and whose rest runs did not gets no
// ratio: the ratios table, the answer and the terminal table read unequal-work and name
// compression, and no figure is printed for it.
func TestUnequalWorkRatio(t *testing.T) {
	var recs []record.Record
	for rep := 1; rep <= 3; rep++ {
		for _, target := range []string{"rest", "grpc"} {
			r := record.Record{Scenario: "s", Step: "getuser", Repeat: rep, Target: target, Tool: PrimaryTool, Method: "GetUser",
				Model: "closed", Connections: 1, Concurrency: 10, Requests: 10000, ThroughputRPS: 1000 * float64(rep),
				LatencyMs: record.Latency{P99: 2}, DurationS: 10, Flags: []string{}}
			r.Wire = &record.Wire{Protocol: "h2c", Encoding: "protobuf", Compression: "none", RxBytesPerRequest: 80, TxBytesPerRequest: 60, RequestsPerConnection: 10000}
			r.ServerOK, r.ServerCount = r.Requests, "exact: read from the server's /metrics before and after the tool"
			if target == "grpc" {
				r.Compression, r.Wire.Compression, r.Wire.TxBytesPerRequest = "gzip", "gzip", 90
			}
			recs = append(recs, r)
		}
	}
	s := Summarize(nil, recs)
	if len(s.Ratios) != 1 {
		t.Fatalf("%d ratios, want 1", len(s.Ratios))
	}
	r := s.Ratios[0]
	if !strings.Contains(r.Unequal, "unequal-work: compression gzip vs none") || !math.IsNaN(r.ThroughputPaired) || r.ThroughputPairedCI.OK {
		t.Fatalf("ratio %+v: want unequal-work naming compression and no figure", r)
	}
	var md, tbl bytes.Buffer
	if err := WriteSummary(&md, nil, recs); err != nil {
		t.Fatal(err)
	}
	if err := Table(&tbl, recs, nil); err != nil {
		t.Fatal(err)
	}
	for name, text := range map[string]string{"summary.md": md.String(), "table": tbl.String()} {
		if !strings.Contains(text, "unequal-work: compression gzip vs none") {
			t.Errorf("%s does not say unequal-work:\n%s", name, text)
		}
	}
	for _, want := range []string{"## The work beneath each ratio", "| getuser | protobench | grpc | n/a | 80 | 90 | h2c | protobuf | gzip | cleartext | 10,000 | agrees (3 of 3 runs) | **unequal-work: compression gzip vs none** |",
		"The work per request: grpc"} {
		if !strings.Contains(md.String(), want) {
			t.Errorf("summary.md lacks %q:\n%s", want, md.String())
		}
	}
	if !strings.Contains(md.String(), "no ratio, unequal-work") {
		t.Errorf("summary.md's answer gives a ratio for unequal work:\n%s", md.String())
	}
	// The same runs without gzip on one side have a ratio.
	for i := range recs {
		recs[i].Compression = ""
	}
	if r := Summarize(nil, recs).Ratios[0]; r.Unequal != "" || math.IsNaN(r.ThroughputPaired) {
		t.Fatalf("equal work: %+v", r)
	}
}
