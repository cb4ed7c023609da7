package scenario

import (
	"regexp"
	"strings"

	"go.yaml.in/yaml/v3"

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
		if key == "gzip" {
			return "knob gzip is now the step's setting compression: gzip (client and server compress; none, the default, neither)", true
		}
		return d.clientKnobElsewhere(key, target)
	})
	d.mapping(n, field, handlers)
	return knobs, lines
}
