package results

import (
	"bytes"
	"fmt"
	"math"
	"sort"
	"strings"

	"github.com/protobench/protobench/internal/scenario"
	"github.com/protobench/protobench/internal/stats"
)

// This file answers "why do the figures differ?": how each target was driven (its topology),
// what happens to one protocol when the same requests in flight spread over more connections,
// and a transport × encoding grid that separates HTTP/2 from protobuf from gRPC itself. Only the
// primary tool's groups are used, so every cell comes from the same client architecture.

// TopologyRow says how one target was driven in one step.
type TopologyRow struct {
	BaseStep, Target, Topology string
}

// TopologySweep is a step that kept in_flight fixed and varied the connections: one row per
// connection count, one column per target (or transport).
type TopologySweep struct {
	BaseStep string
	InFlight int
	Columns  []string         // column labels, e.g. "grpc", "rest (HTTP/2)"
	Rows     []int            // connections
	Cells    map[int][]*Group // Rows[i] → one group per column, nil where missing
}

// CellTable is a transport × encoding grid: one row per cell, each compared with Baseline.
type CellTable struct {
	BaseStep string
	Rows     []CellRow
	Reading  string // one sentence that reads the table for the user
}

// CellRow is one cell of the grid.
type CellRow struct {
	Label        string // "REST, HTTP/1.1 + JSON"
	Group        *Group
	Ratio        float64 // throughput / baseline throughput
	RatioCI      stats.Interval
	CPUPerReqRel float64 // CPU µs per request / the baseline's
}

func topologies(groups []*Group) []TopologyRow {
	var rows []TopologyRow
	seen := map[string]bool{}
	for _, g := range groups {
		if g.Tool != PrimaryTool || g.Topology == "" {
			continue
		}
		label := cellLabel(g)
		key := g.BaseStep + "\x00" + label + "\x00" + g.Topology
		if seen[key] {
			continue
		}
		seen[key] = true
		rows = append(rows, TopologyRow{BaseStep: g.BaseStep, Target: label, Topology: g.Topology})
	}
	return rows
}

// cellLabel names a group's target with its transport and encoding where it has them.
func cellLabel(g *Group) string {
	if g.HTTPVersion == "" {
		return g.Target
	}
	enc := "JSON"
	if g.Encoding == scenario.EncodingProtobuf {
		enc = "protobuf"
	}
	return fmt.Sprintf("%s (HTTP/%s + %s)", g.Target, g.HTTPVersion, enc)
}

// topologySweeps finds steps with a fixed in_flight whose variants differ in connections.
func topologySweeps(groups []*Group) []TopologySweep {
	byStep := map[string][]*Group{}
	var order []string
	for _, g := range groups {
		if g.Tool != PrimaryTool || g.InFlight == 0 {
			continue
		}
		if _, ok := byStep[g.BaseStep]; !ok {
			order = append(order, g.BaseStep)
		}
		byStep[g.BaseStep] = append(byStep[g.BaseStep], g)
	}
	var out []TopologySweep
	for _, step := range order {
		gs := byStep[step]
		conns := map[int]bool{}
		inFlight := map[int]bool{}
		for _, g := range gs {
			conns[g.Connections] = true
			inFlight[g.InFlight] = true
		}
		if len(conns) < 3 || len(inFlight) != 1 {
			continue
		}
		sw := TopologySweep{BaseStep: step, InFlight: gs[0].InFlight, Cells: map[int][]*Group{}}
		col := map[string]int{}
		for _, g := range gs {
			l := cellLabel(g)
			if _, ok := col[l]; !ok {
				col[l] = len(sw.Columns)
				sw.Columns = append(sw.Columns, l)
			}
		}
		for c := range conns {
			sw.Rows = append(sw.Rows, c)
			sw.Cells[c] = make([]*Group, len(sw.Columns))
		}
		sort.Ints(sw.Rows)
		for _, g := range gs {
			sw.Cells[g.Connections][col[cellLabel(g)]] = g
		}
		out = append(out, sw)
	}
	return out
}

// cellTables builds a grid for every step whose HTTP target ran over more than one
// (http_version, encoding) cell. Its baseline is the step's baseline target over HTTP/1.1 with
// JSON, which is how REST is usually run.
func cellTables(plan *scenario.Plan, groups []*Group) []CellTable {
	byStep := map[string][]*Group{}
	var order []string
	for _, g := range groups {
		if g.Tool != PrimaryTool {
			continue
		}
		if _, ok := byStep[g.BaseStep]; !ok {
			order = append(order, g.BaseStep)
		}
		byStep[g.BaseStep] = append(byStep[g.BaseStep], g)
	}
	var out []CellTable
	for _, step := range order {
		gs := byStep[step]
		cells := map[string]bool{}
		for _, g := range gs {
			if g.HTTPVersion != "" {
				cells[g.HTTPVersion+"/"+g.Encoding] = true
			}
		}
		if len(cells) < 2 {
			continue
		}
		var base *Group
		for _, g := range gs {
			if g.HTTPVersion == scenario.HTTP1 && g.Encoding == scenario.EncodingJSON {
				if base == nil {
					base = g
				}
				if st := stepOf(plan, step); st != nil && st.Baseline == g.Target {
					base = g
				}
			}
		}
		if base == nil {
			continue
		}
		t := CellTable{BaseStep: step}
		for _, g := range gs {
			row := CellRow{Label: cellLabel(g), Group: g}
			row.Ratio, row.RatioCI = stats.Ratio(g.values(scenario.MetricThroughputRPS), base.values(scenario.MetricThroughputRPS), CILevel)
			row.CPUPerReqRel = g.CPUMicrosPerRequest / base.CPUMicrosPerRequest
			t.Rows = append(t.Rows, row)
		}
		t.Reading = readCells(gs, base)
		out = append(out, t)
	}
	return out
}

// readCells turns the grid into one sentence: how much of the gap the transport explains, how
// much the encoding, and what gRPC adds over HTTP/2 with protobuf.
func readCells(gs []*Group, base *Group) string {
	find := func(httpVersion, encoding string) *Group {
		for _, g := range gs {
			if g.Target == base.Target && g.HTTPVersion == httpVersion && g.Encoding == encoding {
				return g
			}
		}
		return nil
	}
	rps := func(g *Group) float64 {
		if g == nil {
			return math.NaN()
		}
		return g.Throughput.Median
	}
	h2json := find(scenario.HTTP2, scenario.EncodingJSON)
	h1pb := find(scenario.HTTP1, scenario.EncodingProtobuf)
	h2pb := find(scenario.HTTP2, scenario.EncodingProtobuf)
	var grpc *Group
	for _, g := range gs {
		if g.HTTPVersion == "" && (grpc == nil || g.Throughput.Median > grpc.Throughput.Median) {
			grpc = g
		}
	}
	var parts []string
	if h2json != nil {
		parts = append(parts, fmt.Sprintf("moving %s from HTTP/1.1 to HTTP/2 (one multiplexed connection instead of one per request) changes throughput %s and CPU per request from %s to %s µs",
			base.Target, fmtRatio(rps(h2json)/rps(base)), fmtNum(base.CPUMicrosPerRequest), fmtNum(h2json.CPUMicrosPerRequest)))
	}
	switch {
	case h1pb != nil && h2pb != nil && h2json != nil:
		parts = append(parts, fmt.Sprintf("protobuf instead of JSON changes it %s over HTTP/1.1 and %s over HTTP/2",
			fmtRatio(rps(h1pb)/rps(base)), fmtRatio(rps(h2pb)/rps(h2json))))
	case h1pb != nil:
		parts = append(parts, fmt.Sprintf("protobuf instead of JSON changes it %s over HTTP/1.1", fmtRatio(rps(h1pb)/rps(base))))
	case h2pb != nil && h2json != nil:
		parts = append(parts, fmt.Sprintf("protobuf instead of JSON changes it %s over HTTP/2", fmtRatio(rps(h2pb)/rps(h2json))))
	}
	if grpc != nil && h2pb != nil {
		parts = append(parts, fmt.Sprintf("and %s over HTTP/2 + protobuf is %s", grpc.Target, fmtRatio(rps(grpc)/rps(h2pb))))
	}
	if len(parts) == 0 {
		return ""
	}
	s := "Read: " + strings.Join(parts, "; ") + "."
	if grpc != nil {
		s += fmt.Sprintf(" Overall %s is %s of %s over HTTP/1.1 + JSON.", grpc.Target, fmtRatio(rps(grpc)/rps(base)), base.Target)
	}
	return s
}

func writeTopologies(b *bytes.Buffer, s *Summary) {
	if len(s.Topologies) == 0 {
		return
	}
	b.WriteString("## How each target was driven\n\n")
	b.WriteString("The same requests in flight on every side; each protocol on the connections its own clients use unless the step says otherwise.\n\n")
	b.WriteString("| Step | Target | Topology |\n|---|---|---|\n")
	for _, r := range s.Topologies {
		fmt.Fprintf(b, "| %s | %s | %s |\n", r.BaseStep, r.Target, r.Topology)
	}
	b.WriteString("\n")
}

func writeSweeps(b *bytes.Buffer, s *Summary) {
	for _, sw := range s.Sweeps {
		fmt.Fprintf(b, "## Topology: %d requests in flight over more connections (%s)\n\n", sw.InFlight, sw.BaseStep)
		b.WriteString("Median req/s, p99 ms and server CPU µs per request. Fewer connections means more streams on each.\n\n")
		b.WriteString("| Connections × streams |")
		for _, c := range sw.Columns {
			fmt.Fprintf(b, " %s req/s | p99 ms | µs/req |", c)
		}
		b.WriteString("\n|---|" + strings.Repeat("---:|---:|---:|", len(sw.Columns)) + "\n")
		for _, conns := range sw.Rows {
			fmt.Fprintf(b, "| %d × %d |", conns, sw.InFlight/conns)
			for _, g := range sw.Cells[conns] {
				if g == nil {
					b.WriteString(" – | – | – |")
					continue
				}
				fmt.Fprintf(b, " %s | %s | %s |", fmtNum(g.Throughput.Median), fmtNum(g.P99.Median), fmtNum(g.CPUMicrosPerRequest))
			}
			b.WriteString("\n")
		}
		b.WriteString("\n")
	}
}

func writeCells(b *bytes.Buffer, s *Summary) {
	for _, t := range s.Cells {
		fmt.Fprintf(b, "## Where the difference comes from (%s)\n\n", t.BaseStep)
		b.WriteString("The same method on the same servers, one transport or encoding changed at a time. " +
			"Ratios divide by the first HTTP/1.1 + JSON cell, with Welch's t interval on the logs; each interval says its method, coverage and n.\n\n")
		b.WriteString("| Cell | Topology | req/s (interval of the median) | p99 ms | CPU µs/req | req/s ratio (interval) | CPU/req ratio |\n|---|---|---:|---:|---:|---:|---:|\n")
		for _, r := range t.Rows {
			g := r.Group
			fmt.Fprintf(b, "| %s | %s | %s | %s | %s | %s | %s |\n", r.Label, orDash(g.Topology), fmtWithCI(g.Throughput),
				fmtNum(g.P99.Median), fmtNum(g.CPUMicrosPerRequest), fmtRatioLabelled(r.Ratio, r.RatioCI), fmtRatio(r.CPUPerReqRel))
		}
		if t.Reading != "" {
			b.WriteString("\n" + t.Reading + "\n")
		}
		b.WriteString("\n")
	}
}
