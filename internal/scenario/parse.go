package scenario

import (
	"fmt"
	"regexp"
	"sort"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/protobench/protobench/internal/contract"
	"github.com/protobench/protobench/internal/targets"
)

// methods lists every method a step may name: the registry's and the custom targets' requests.
func (d *decoder) methods() []string {
	ms := targets.AllMethods()
	for _, n := range sortedKeys(d.sc.Custom) {
		for _, m := range d.sc.Custom[n].Methods {
			if !contains(ms, m) {
				ms = append(ms, m)
			}
		}
	}
	return ms
}

// namePattern keeps scenario and step names usable in file names, run IDs and metric labels.
var namePattern = regexp.MustCompile(`^[a-z0-9][a-z0-9-]{0,47}$`)

const nameRule = "lower-case letters, digits and dashes, at most 48, starting with a letter or digit"

func (d *decoder) name(n *yaml.Node, field string) (string, bool) {
	s, ok := d.str(n, field)
	if !ok {
		return "", false
	}
	if !namePattern.MatchString(s) {
		d.add(lineOf(n), field, "expected %s, got %q", nameRule, clip(s))
		return "", false
	}
	return s, true
}

func (d *decoder) decodeScenario(root *yaml.Node, sc *Scenario) {
	var defaults TimingOverride
	d.sc = sc
	if sc.Custom == nil {
		sc.Custom = map[string]*CustomTarget{}
	}
	// Custom targets come first, wherever the file puts them: steps name them.
	if resolve(root).Kind == yaml.MappingNode {
		r := resolve(root)
		for i := 0; i+1 < len(r.Content); i += 2 {
			if resolve(r.Content[i]).Value == "custom_targets" {
				d.decodeCustomTargets(r.Content[i+1], "custom_targets", sc)
			}
		}
	}
	seen := d.mapping(root, "", map[string]keyHandler{
		"custom_targets": func(*yaml.Node, string) {},
		"name":           func(v *yaml.Node, f string) { sc.Name, _ = d.name(v, f) },
		"description": func(v *yaml.Node, f string) {
			sc.Description, _ = d.str(v, f)
		},
		"source": func(v *yaml.Node, f string) { sc.Source, _ = d.str(v, f) },
		"published": func(v *yaml.Node, f string) {
			sc.Published = d.decodePublished(v, f)
		},
		"caps":     func(v *yaml.Node, f string) { sc.Caps = d.decodeCaps(v, f) },
		"layout":   func(v *yaml.Node, f string) { sc.Layout = d.decodeLayout(v, f) },
		"servers":  func(v *yaml.Node, f string) { sc.Servers = d.decodeServers(v, f) },
		"defaults": func(v *yaml.Node, f string) { defaults = d.decodeTiming(v, f) },
		"steps": func(v *yaml.Node, f string) {
			d.list(v, f, func(item *yaml.Node, f string) {
				sc.Steps = append(sc.Steps, d.decodeStep(item, f))
			})
		},
	})
	if seen == nil {
		return
	}
	d.require(root, "scenario", seen, "name", "description", "steps")
	sc.Defaults = Timing{Warmup: DefaultWarmup, Duration: DefaultDuration, Repeats: DefaultRepeats, Cooldown: DefaultCooldown}
	defaults.apply(&sc.Defaults)
	if sc.Servers == nil {
		sc.Servers = map[string]Server{}
	}
}

// apply copies the fields o sets onto t.
func (o TimingOverride) apply(t *Timing) {
	if o.Warmup != nil {
		t.Warmup = *o.Warmup
	}
	if o.Duration != nil {
		t.Duration = *o.Duration
	}
	if o.Cooldown != nil {
		t.Cooldown = *o.Cooldown
	}
	if o.Repeats != nil {
		t.Repeats = *o.Repeats
	}
}

// timingHandlers decodes the four timing keys, shared by defaults and steps.
func (d *decoder) timingHandlers(t *TimingOverride, h map[string]keyHandler) map[string]keyHandler {
	h["warmup"] = func(v *yaml.Node, f string) {
		if x, ok := d.duration(v, f, true); ok {
			t.Warmup = &x
		}
	}
	h["duration"] = func(v *yaml.Node, f string) {
		if x, ok := d.duration(v, f, false); ok {
			t.Duration = &x
		}
	}
	h["cooldown"] = func(v *yaml.Node, f string) {
		if x, ok := d.duration(v, f, true); ok {
			t.Cooldown = &x
		}
	}
	h["repeats"] = func(v *yaml.Node, f string) {
		if x, ok := d.integer(v, f, 1, maxRepeats); ok {
			r := int(x)
			t.Repeats = &r
		}
	}
	return h
}

func (d *decoder) decodeTiming(n *yaml.Node, field string) TimingOverride {
	var t TimingOverride
	d.mapping(n, field, d.timingHandlers(&t, map[string]keyHandler{}))
	return t
}

func (d *decoder) decodeCaps(n *yaml.Node, field string) Caps {
	var c Caps
	d.mapping(n, field, map[string]keyHandler{
		"server_cpus":   func(v *yaml.Node, f string) { c.ServerCPUs, _ = d.number(v, f, 0, 1024, true) },
		"client_cpus":   func(v *yaml.Node, f string) { c.ClientCPUs, _ = d.number(v, f, 0, 1024, true) },
		"server_memory": func(v *yaml.Node, f string) { c.ServerMemoryBytes, _ = d.size(v, f, 6<<20) },
		"client_memory": func(v *yaml.Node, f string) { c.ClientMemoryBytes, _ = d.size(v, f, 6<<20) },
	})
	return c
}

func (d *decoder) decodeLayout(n *yaml.Node, field string) LayoutSpec {
	l := LayoutSpec{lines: map[string]int{}}
	cpuset := func(dst *string) keyHandler {
		return func(v *yaml.Node, f string) {
			l.lines[f[strings.LastIndex(f, ".")+1:]] = lineOf(v)
			s, ok := d.text(v, f)
			if !ok {
				return
			}
			if _, err := ParseCPUSet(s); err != nil {
				d.add(lineOf(v), f, "expected a cpuset such as 0, 0-3 or 0,2, got %q", clip(s))
				return
			}
			*dst = s
		}
	}
	d.mapping(n, field, map[string]keyHandler{
		"server_cpuset":        cpuset(&l.ServerCPUSet),
		"client_cpuset":        cpuset(&l.ClientCPUSet),
		"observability_cpuset": cpuset(&l.ObservabilityCPUSet),
	})
	return l
}

// decodeServers reads a mapping from target name to that server's caps and knobs.
func (d *decoder) decodeServers(n *yaml.Node, field string) map[string]Server {
	out := map[string]Server{}
	handlers := map[string]keyHandler{}
	for _, t := range d.sc.targetNames() {
		target := t
		handlers[target] = func(v *yaml.Node, f string) {
			var s Server
			d.mapping(v, f, map[string]keyHandler{
				"cpus":   func(v *yaml.Node, f string) { s.CPUs, _ = d.number(v, f, 0, 1024, true) },
				"memory": func(v *yaml.Node, f string) { s.MemoryBytes, _ = d.size(v, f, 6<<20) },
				"knobs":  func(v *yaml.Node, f string) { s.Knobs, s.knobLines = d.decodeKnobs(v, f, target) },
			})
			out[target] = s
		}
	}
	d.mapping(n, field, handlers)
	return out
}

// decodeKnobs reads a target's knobs, and the line of each.
func (d *decoder) decodeKnobs(n *yaml.Node, field, target string) (map[string]string, map[string]int) {
	knobs, lines := map[string]string{}, map[string]int{}
	handlers := map[string]keyHandler{}
	t, _ := d.sc.Target(target)
	for _, name := range t.KnobNames() {
		name := name
		spec := t.Knobs[name]
		handlers[name] = func(v *yaml.Node, f string) {
			lines[name] = lineOf(v)
			raw, ok := d.text(v, f)
			if !ok {
				return
			}
			val, err := checkKnob(spec, raw)
			if err != nil {
				d.add(lineOf(v), f, "%v", err)
				return
			}
			knobs[name] = val
		}
	}
	n = d.refuse(n, field, func(key string) (string, bool) {
		if _, own := t.Knobs[key]; own {
			return "", false
		}
		return d.clientKnobElsewhere(key, target)
	})
	d.mapping(n, field, handlers)
	return knobs, lines
}

func (d *decoder) decodeStep(n *yaml.Node, field string) Step {
	st := Step{Line: lineOf(n), pos: map[string]int{}}
	at := func(key string, v *yaml.Node) { st.pos[key] = lineOf(v) }
	h := map[string]keyHandler{
		"name":        func(v *yaml.Node, f string) { st.Name, _ = d.name(v, f) },
		"description": func(v *yaml.Node, f string) { st.Description, _ = d.str(v, f) },
		"targets": func(v *yaml.Node, f string) {
			at("targets", v)
			st.Targets = d.nameList(v, f, "target", d.sc.targetNames())
			d.itemLines(v, "targets", st.pos)
		},
		"tools": func(v *yaml.Node, f string) {
			at("tools", v)
			st.Tools = d.nameList(v, f, "tool", Tools)
			d.itemLines(v, "tools", st.pos)
		},
		"method": func(v *yaml.Node, f string) {
			at("method", v)
			if s, ok := d.str(v, f); ok {
				if !contains(d.methods(), s) {
					d.add(lineOf(v), f, "unknown method %q; expected one of %s", clip(s), strings.Join(d.methods(), ", "))
					return
				}
				st.Method = s
			}
		},
		"mix": func(v *yaml.Node, f string) { at("mix", v); st.Mix = d.decodeMix(v, f) },
		"model": func(v *yaml.Node, f string) {
			at("model", v)
			if s, ok := d.str(v, f); ok {
				if s != ModelClosed && s != ModelOpen {
					d.add(lineOf(v), f, "expected closed or open, got %q", clip(s))
					return
				}
				st.Model = s
			}
		},
		"connections": func(v *yaml.Node, f string) {
			at("connections", v)
			x, _ := d.integer(v, f, 1, maxConnections)
			st.Connections = int(x)
		},
		"concurrency": func(v *yaml.Node, f string) {
			at("concurrency", v)
			x, _ := d.integer(v, f, 1, maxConcurrency)
			st.Concurrency = int(x)
		},
		"rate": func(v *yaml.Node, f string) {
			at("rate", v)
			st.Rate, _ = d.number(v, f, 0, maxRate, true)
		},
		"rate_from": func(v *yaml.Node, f string) {
			at("rate_from", v)
			st.RateFrom = d.decodeRateFrom(v, f)
		},
		"payload_bytes": func(v *yaml.Node, f string) {
			at("payload_bytes", v)
			x, _ := d.size(v, f, 0)
			st.PayloadBytes = int(x)
		},
		"caps":    func(v *yaml.Node, f string) { st.Caps = d.decodeCaps(v, f) },
		"servers": func(v *yaml.Node, f string) { at("servers", v); st.Servers = d.decodeServers(v, f) },
		"matrix":  func(v *yaml.Node, f string) { st.Matrix = d.decodeMatrix(v, f, st.pos) },
		"baseline": func(v *yaml.Node, f string) {
			at("baseline", v)
			if s, ok := d.str(v, f); ok {
				if !contains(d.sc.targetNames(), s) {
					d.add(lineOf(v), f, "unknown target %q; expected one of %s", clip(s), strings.Join(d.sc.targetNames(), ", "))
					return
				}
				st.Baseline = s
			}
		},
		"knee_p99_ms": func(v *yaml.Node, f string) {
			at("knee_p99_ms", v)
			st.KneeP99Ms, _ = d.number(v, f, 0, 1e6, true)
		},
	}
	d.transportHandlers(&st, h)
	d.tlsHandlers(&st, h)
	d.churnHandlers(&st, h)
	n = d.refuse(n, field, movedStepKey)
	seen := d.mapping(n, field, d.timingHandlers(&st.Timing, h))
	d.require(n, field, seen, "name")
	// Errors about a key point at the key's line, which for a block value is the line above it.
	for k, kn := range seen {
		st.pos[k] = kn.Line
	}
	return st
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
	seen := d.mapping(n, field, handlers)
	for k, kn := range seen {
		pos["matrix."+k] = kn.Line
	}
	if seen != nil && len(seen) == 0 {
		d.add(m.Line, field, "empty matrix expands to nothing; give at least one of concurrency, connections, encoding, http_version, in_flight, payload_bytes, rate, requests_per_connection, targets, tls, tools")
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
