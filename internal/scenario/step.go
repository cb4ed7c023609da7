package scenario

import (
	"fmt"
	"sort"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/protobench/protobench/internal/contract"
	"github.com/protobench/protobench/internal/targets"
)

func (d *decoder) decodeStep(n *yaml.Node, field string) Step {
	st := Step{Line: lineOf(n), pos: map[string]int{}}
	h := map[string]keyHandler{
		"name":        func(v *yaml.Node, f string) { st.Name, _ = d.name(v, f) },
		"description": func(v *yaml.Node, f string) { st.Description, _ = d.str(v, f) },
		"caps":        func(v *yaml.Node, f string) { st.Caps = d.decodeCaps(v, f) },
		"servers":     func(v *yaml.Node, f string) { st.mark("servers", v); st.Servers = d.decodeServers(v, f) },
		"matrix":      func(v *yaml.Node, f string) { st.Matrix = d.decodeMatrix(v, f, st.pos) },
	}
	d.stepWorkHandlers(&st, h)
	d.stepLoadHandlers(&st, h)
	d.transportHandlers(&st, h)
	d.tlsHandlers(&st, h)
	d.churnHandlers(&st, h)
	d.compressionHandlers(&st, h)
	n = d.refuse(n, field, movedStepKey)
	seen := d.mapping(n, field, d.timingHandlers(&st.Timing, h))
	d.require(n, field, seen, "name")
	// Errors about a key point at the key's line, which for a block value is the line above it.
	for k, kn := range seen {
		st.pos[k] = kn.Line
	}
	return st
}

// mark records the line of a step's key, for errors the validation finds later.
func (st *Step) mark(key string, v *yaml.Node) { st.pos[key] = lineOf(v) }

// stepWorkHandlers add the keys saying what a step sends and to whom: targets, tools, method
// or mix, and the baseline target.
func (d *decoder) stepWorkHandlers(st *Step, h map[string]keyHandler) {
	h["targets"] = func(v *yaml.Node, f string) {
		st.mark("targets", v)
		st.Targets = d.nameList(v, f, "target", d.sc.targetNames())
		d.itemLines(v, "targets", st.pos)
	}
	h["tools"] = func(v *yaml.Node, f string) {
		st.mark("tools", v)
		st.Tools = d.nameList(v, f, "tool", Tools)
		d.itemLines(v, "tools", st.pos)
	}
	h["method"] = func(v *yaml.Node, f string) {
		st.mark("method", v)
		if s, ok := d.str(v, f); ok {
			if !contains(d.methods(), s) {
				d.add(lineOf(v), f, "unknown method %q; expected one of %s", clip(s), strings.Join(d.methods(), ", "))
				return
			}
			st.Method = s
		}
	}
	h["mix"] = func(v *yaml.Node, f string) { st.mark("mix", v); st.Mix = d.decodeMix(v, f) }
	h["baseline"] = func(v *yaml.Node, f string) {
		st.mark("baseline", v)
		if s, ok := d.str(v, f); ok {
			if !contains(d.sc.targetNames(), s) {
				d.add(lineOf(v), f, "unknown target %q; expected one of %s", clip(s), strings.Join(d.sc.targetNames(), ", "))
				return
			}
			st.Baseline = s
		}
	}
}

// stepLoadHandlers add the keys shaping a step's load: the model, connections, concurrency,
// rates, payload size and the knee threshold.
func (d *decoder) stepLoadHandlers(st *Step, h map[string]keyHandler) {
	h["model"] = func(v *yaml.Node, f string) {
		st.mark("model", v)
		if s, ok := d.str(v, f); ok {
			if s != ModelClosed && s != ModelOpen {
				d.add(lineOf(v), f, "expected closed or open, got %q", clip(s))
				return
			}
			st.Model = s
		}
	}
	h["connections"] = func(v *yaml.Node, f string) {
		st.mark("connections", v)
		x, _ := d.integer(v, f, 1, maxConnections)
		st.Connections = int(x)
	}
	h["concurrency"] = func(v *yaml.Node, f string) {
		st.mark("concurrency", v)
		x, _ := d.integer(v, f, 1, maxConcurrency)
		st.Concurrency = int(x)
	}
	h["rate"] = func(v *yaml.Node, f string) {
		st.mark("rate", v)
		st.Rate, _ = d.number(v, f, 0, maxRate, true)
	}
	h["rate_from"] = func(v *yaml.Node, f string) {
		st.mark("rate_from", v)
		st.RateFrom = d.decodeRateFrom(v, f)
	}
	h["payload_bytes"] = func(v *yaml.Node, f string) {
		st.mark("payload_bytes", v)
		x, _ := d.size(v, f, 0)
		st.PayloadBytes = int(x)
	}
	h["knee_p99_ms"] = func(v *yaml.Node, f string) {
		st.mark("knee_p99_ms", v)
		st.KneeP99Ms, _ = d.number(v, f, 0, 1e6, true)
	}
}

// itemLines records the line of every item of a list, keyed "key[i]".
func (d *decoder) itemLines(n *yaml.Node, key string, pos map[string]int) {
	n = resolve(n)
	if n.Kind != yaml.SequenceNode {
		return
	}
	for i, item := range n.Content {
		pos[fmt.Sprintf("%s[%d]", key, i)] = lineOf(item)
	}
}

// decodeMix reads method weights such as {Echo: 70, GetUser: 30}.
func (d *decoder) decodeMix(n *yaml.Node, field string) map[string]int {
	mix := map[string]int{}
	handlers := map[string]keyHandler{}
	for _, m := range d.methods() {
		m := m
		handlers[m] = func(v *yaml.Node, f string) {
			if w, ok := d.integer(v, f, 1, 1000000); ok {
				mix[m] = int(w)
			}
		}
	}
	seen := d.mapping(n, field, handlers)
	if seen != nil && len(seen) < 2 {
		d.add(lineOf(n), field, "a mix needs at least two methods; use method: for one")
	}
	return mix
}

func (d *decoder) decodeMatrix(n *yaml.Node, field string, pos map[string]int) *Matrix {
	m := &Matrix{Line: lineOf(n)}
	ints := func(dst *[]int, key string, min, max int64) keyHandler {
		return func(v *yaml.Node, f string) {
			pos["matrix."+key] = lineOf(v)
			seen := map[int64]bool{}
			d.list(v, f, func(item *yaml.Node, f string) {
				x, ok := d.integer(item, f, min, max)
				if ok && seen[x] {
					d.add(lineOf(item), f, "value %d listed twice", x)
					return
				}
				if ok {
					seen[x] = true
					*dst = append(*dst, int(x))
				}
			})
		}
	}
	handlers := map[string]keyHandler{
		"connections": ints(&m.Connections, "connections", 1, maxConnections),
		"concurrency": ints(&m.Concurrency, "concurrency", 1, maxConcurrency),
		"payload_bytes": func(v *yaml.Node, f string) {
			pos["matrix.payload_bytes"] = lineOf(v)
			seen := map[int64]bool{}
			d.list(v, f, func(item *yaml.Node, f string) {
				x, ok := d.size(item, f, 0)
				if ok && seen[x] {
					d.add(lineOf(item), f, "value %s listed twice", FormatSize(x))
					return
				}
				if ok {
					seen[x] = true
					m.PayloadBytes = append(m.PayloadBytes, int(x))
				}
			})
		},
		"rate": func(v *yaml.Node, f string) {
			pos["matrix.rate"] = lineOf(v)
			seen := map[float64]bool{}
			d.list(v, f, func(item *yaml.Node, f string) {
				x, ok := d.number(item, f, 0, maxRate, true)
				if ok && seen[x] {
					d.add(lineOf(item), f, "value %s listed twice", formatFloat(x))
					return
				}
				if ok {
					seen[x] = true
					m.Rate = append(m.Rate, x)
				}
			})
		},
		"targets": func(v *yaml.Node, f string) {
			pos["matrix.targets"] = lineOf(v)
			m.Targets = d.nameList(v, f, "target", d.sc.targetNames())
			d.itemLines(v, "matrix.targets", pos)
		},
		"tools": func(v *yaml.Node, f string) {
			pos["matrix.tools"] = lineOf(v)
			m.Tools = d.nameList(v, f, "tool", Tools)
			d.itemLines(v, "matrix.tools", pos)
		},
	}
	d.matrixTransportHandlers(m, pos, handlers)
	d.matrixTLSHandlers(m, pos, handlers)
	d.matrixChurnHandlers(m, pos, handlers)
	d.matrixCompressionHandlers(m, pos, handlers)
	seen := d.mapping(n, field, handlers)
	for k, kn := range seen {
		pos["matrix."+k] = kn.Line
	}
	if seen != nil && len(seen) == 0 {
		d.add(m.Line, field, "empty matrix expands to nothing; give at least one of compression, concurrency, connections, encoding, http_version, in_flight, payload_bytes, rate, requests_per_connection, targets, tls, tools")
	}
	return m
}

// mixString is the canonical method string of a mix: "Echo:70,GetUser:30", sorted by method, so
// one string carries the mix through tool.Invocation.Method and the load generator's --method.
func mixString(mix map[string]int) string {
	names := make([]string, 0, len(mix))
	for m := range mix {
		names = append(names, m)
	}
	sort.Strings(names)
	parts := make([]string, len(names))
	for i, m := range names {
		parts[i] = fmt.Sprintf("%s:%d", m, mix[m])
	}
	return strings.Join(parts, ",")
}

// isPayloadMethod reports whether method (or any method of a mix) carries payload_bytes.
func isPayloadMethod(method string, mix map[string]int) bool {
	if len(mix) == 0 {
		return contains(targets.PayloadMethods, method)
	}
	for m := range mix {
		if contains(targets.PayloadMethods, m) {
			return true
		}
	}
	return false
}

// maxPayloadFor is the largest payload target accepts under the given knobs.
func maxPayloadFor(knobs map[string]string) int64 {
	if v, ok := knobs["max_payload_bytes"]; ok {
		if n, err := ParseSize(v); err == nil {
			return n
		}
	}
	return contract.DefaultMaxPayloadBytes
}

// decodeRateFrom reads rate_from: {step: name, percent: [25, 50, ...]}.
func (d *decoder) decodeRateFrom(n *yaml.Node, field string) *RateFrom {
	rf := &RateFrom{Line: lineOf(n)}
	seen := d.mapping(n, field, map[string]keyHandler{
		"step": func(v *yaml.Node, f string) { rf.Step, _ = d.str(v, f) },
		"percent": func(v *yaml.Node, f string) {
			got := map[float64]bool{}
			d.list(v, f, func(item *yaml.Node, f string) {
				x, ok := d.number(item, f, 0, 100, true)
				if ok && got[x] {
					d.add(lineOf(item), f, "value %s listed twice", formatFloat(x))
					return
				}
				if ok {
					got[x] = true
					rf.Percent = append(rf.Percent, x)
				}
			})
		},
	})
	d.require(n, field, seen, "step", "percent")
	return rf
}
