package scenario

import (
	"fmt"
	"strings"

	"go.yaml.in/yaml/v3"
)

// Forever is requests_per_connection's default: connections are reused for the whole run.
const Forever = "forever"

// maxRequestsPerConnection bounds requests_per_connection; beyond it a run barely churns.
const maxRequestsPerConnection = 1000000

// churnHandlers adds the step key requests_per_connection: each connection carries that many
// requests, is closed, and a new one takes its place (connection churn), so that connecting and
// the TLS handshake are part of what the step measures. It applies to every protocol the tool
// can churn, so it is a step key, not a target's knob.
func (d *decoder) churnHandlers(st *Step, h map[string]keyHandler) {
	h["requests_per_connection"] = func(v *yaml.Node, f string) {
		st.pos["requests_per_connection"] = lineOf(v)
		st.RequestsPerConnection, _ = d.requestsPerConnection(v, f)
	}
}

// matrixChurnHandlers adds the matrix key requests_per_connection: [1, 100, forever].
func (d *decoder) matrixChurnHandlers(m *Matrix, pos map[string]int, h map[string]keyHandler) {
	h["requests_per_connection"] = uniqueAxis(d, pos, "requests_per_connection", &m.RequestsPerConnection, d.requestsPerConnection, churnText)
}

// requestsPerConnection decodes a positive integer, or forever (0).
func (d *decoder) requestsPerConnection(n *yaml.Node, field string) (int, bool) {
	s, ok := d.scalar(n, field, "an integer or forever")
	if !ok {
		return 0, false
	}
	if s.ShortTag() == "!!str" && s.Value == Forever {
		return 0, true
	}
	var v int64
	if s.ShortTag() != "!!int" || s.Decode(&v) != nil || v < 1 || v > maxRequestsPerConnection {
		d.add(s.Line, field, "expected requests per connection from 1 to %d, or %s (reuse connections for the whole run), got %s",
			maxRequestsPerConnection, Forever, describe(s))
		return 0, false
	}
	return int(v), true
}

// churnText is a requests_per_connection value as a scenario writes it.
func churnText(n int) string {
	if n == 0 {
		return Forever
	}
	return fmt.Sprint(n)
}

// expandChurn multiplies the variants by the matrix's requests_per_connection values, named
// -perconn1, -perconn100, -perconnforever.
func expandChurn(in []Variant, values []int) []Variant {
	return expandAxis(in, values, func(v *Variant, x int) {
		v.RequestsPerConnection = x
		v.Name += "-perconn" + churnText(x)
		v.plainName += "-perconn" + churnText(x)
	})
}

// validateChurn refuses churn on the step and in its matrix at once, and on a target whose
// protocol a tool of the step cannot churn (tool.Capabilities.Churn), naming the tools that can.
func validateChurn(d *decoder, sc *Scenario, st *Step, field string) {
	m := st.Matrix
	inMatrix := m != nil && len(m.RequestsPerConnection) > 0
	key := "requests_per_connection"
	if inMatrix {
		key = "matrix.requests_per_connection"
		if hasKey(st.pos, "requests_per_connection") {
			d.add(st.line(key), stepField(field, key), "requests_per_connection is set on the step and in its matrix; keep one")
		}
	}
	churns := st.RequestsPerConnection > 0
	if inMatrix {
		for _, x := range m.RequestsPerConnection {
			churns = churns || x > 0
		}
	}
	if !churns {
		return
	}
	line := st.line(key)
	v := st.Variants()[0]
	for _, tl := range v.Tools {
		c, ok := capabilities(tl)
		if !ok {
			continue
		}
		for _, name := range v.Targets {
			t, ok := sc.Target(name)
			if !ok {
				continue
			}
			if ok, _ := sc.compatible(tl, name); !ok {
				continue
			}
			if !c.Churns(t.Protocol) {
				d.add(line, stepField(field, key), "tool %s cannot churn %s connections (target %s); tools that can: %s",
					tl, t.Protocol, name, toolsThatChurn(t.Protocol))
			}
		}
	}
}

// toolsThatChurn lists, for a message, the tools that can churn protocol's connections.
func toolsThatChurn(protocol string) string {
	var out []string
	for _, n := range Tools {
		if c, _ := capabilities(n); c.Churns(protocol) {
			out = append(out, n)
		}
	}
	if len(out) == 0 {
		return "none"
	}
	return strings.Join(out, ", ")
}
