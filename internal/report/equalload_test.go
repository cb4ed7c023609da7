package report

import (
	"bytes"
	"strings"
	"testing"

	"github.com/protobench/protobench/internal/record"
	"github.com/protobench/protobench/internal/results"
	"github.com/protobench/protobench/internal/svgchart"
)

// TestEqualLoadSection: a folder with equal-load runs gets the section, its table and one chart
// per percentile, linked from the navigation; one without gets none.
func TestEqualLoadSection(t *testing.T) {
	var recs []record.Record
	for _, pct := range []float64{25, 50} {
		for _, target := range []string{"grpc", "rest"} {
			recs = append(recs, record.Record{Scenario: "s", Step: "equal-load-load" + map[float64]string{25: "25", 50: "50"}[pct], Target: target, Tool: "protobench",
				Model: "open", Rate: pct * 400, LoadPercent: pct, CapacityRPS: 40000, CapacityStep: "getuser", Repeat: 1,
				ThroughputRPS: pct * 400, LatencyMs: record.Latency{P50: pct / 100, P99: pct / 10, P999: pct / 5}, CPUMicrosPerRequest: 12.5, Flags: []string{}})
		}
	}
	f := &Folder{Records: recs, Summary: results.Summarize(nil, recs), PerRun: make([]RunDetail, len(recs))}
	var b bytes.Buffer
	if err := Render(&b, f); err != nil {
		t.Fatal(err)
	}
	page := b.String()
	for _, want := range []string{`href="#` + results.EqualLoadAnchor + `"`, "<h2>Latency at equal load</h2>", "step getuser", "40,000 req/s",
		"p99.9 latency at equal offered load", "<td class=\"n\">" + svgchartNum(10000) + "</td>", "12.5"} {
		if !strings.Contains(page, want) {
			t.Errorf("report lacks %q", want)
		}
	}
	if strings.Contains(page, "<h3>Cross-check</h3>") {
		t.Error("a cross-check without a witness tool's runs")
	}
	// A witness's runs at the same loads: the cross-check table, with a verdict per target.
	withK6 := append([]record.Record{}, recs...)
	for _, r := range recs[:2] {
		r.Tool, r.Step = "k6", "equal-load-witness-load25"
		withK6 = append(withK6, r)
	}
	var kb bytes.Buffer
	if err := Render(&kb, &Folder{Records: withK6, Summary: results.Summarize(nil, withK6), PerRun: make([]RunDetail, len(withK6))}); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"<h3>Cross-check</h3>", "<td>k6</td>", "<td>agree</td>"} {
		if !strings.Contains(kb.String(), want) {
			t.Errorf("report with a witness lacks %q", want)
		}
	}
	if n := strings.Count(page, "latency, medians over repeats, each protocol at the same offered rate"); n != 3 {
		t.Errorf("%d equal-load charts, want 3 (p50, p99, p99.9)", n)
	}
	f = &Folder{Records: recs[:0], Summary: results.Summarize(nil, nil)}
	b.Reset()
	if err := Render(&b, f); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(b.String(), "Latency at equal load") {
		t.Error("a folder without equal-load runs has the section")
	}
}

func svgchartNum(v float64) string { return svgchart.FormatNumber(v) }
