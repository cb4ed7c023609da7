package scenario

import (
	"fmt"
	"strings"

	"github.com/protobench/protobench/internal/targets"
)

// A target with client patterns (ZeroMQ's sockets) takes its pattern as a client knob,
// servers.<target>.knobs.pattern, on the scenario or on a step like its other knobs; the registry
// declares the knob (targets.PatternKnob) and which methods each pattern carries.

// movedStepKeys are step keys that have moved, by where they live now: a file that still uses
// one is told where it went rather than that the key is unknown.
var movedStepKeys = map[string]string{
	"zmq_pattern": "servers.zeromq.knobs." + targets.PatternKnob,
}

// movedStepKey is the message for a step key that moved (decoder.refuse).
func movedStepKey(key string) (string, bool) {
	to, ok := movedStepKeys[key]
	if !ok {
		return "", false
	}
	return "moved: use " + to + ", on the step or at the top level", true
}

// clientKnobElsewhere explains a client knob given to a target that lacks it by naming the targets
// that take it; ok is false when no target does, and the key is simply unknown.
func (d *decoder) clientKnobElsewhere(key, target string) (string, bool) {
	var owners []string
	for _, n := range d.sc.targetNames() {
		if t, _ := d.sc.Target(n); t.Knobs[key].Client {
			owners = append(owners, n)
		}
	}
	if len(owners) == 0 {
		return "", false
	}
	return fmt.Sprintf("knob %s applies to target %s only, not %s", key, strings.Join(owners, ", "), target), true
}

// patternFor is the client pattern a step runs target t with: its pattern knob (the step's over
// the scenario's), else the target's default; "" for a target without patterns.
func patternFor(sc *Scenario, st *Step, t targets.Target) string {
	if len(t.Patterns) == 0 {
		return ""
	}
	if p := knobsFor(sc, st, t.Name)[targets.PatternKnob]; p != "" {
		return p
	}
	return t.Patterns[0].Name
}

// patternSetting is where a target's pattern knob is set for a step, for errors.
type patternSetting struct {
	value, field string
	line         int
	scenarioWide bool // set in the scenario's servers block, so the field names no step
}

// patternSettingFor finds target's pattern knob for the step (field is the step's path): the
// step's servers entry, else the scenario's; ok is false when neither sets it.
func patternSettingFor(sc *Scenario, st *Step, field, target string) (patternSetting, bool) {
	key := "servers." + fieldKey(target) + ".knobs." + targets.PatternKnob
	if s := st.Servers[target]; s.Knobs[targets.PatternKnob] != "" {
		return patternSetting{value: s.Knobs[targets.PatternKnob], field: stepField(field, key), line: s.knobLines[targets.PatternKnob]}, true
	}
	if s := sc.Servers[target]; s.Knobs[targets.PatternKnob] != "" {
		return patternSetting{value: s.Knobs[targets.PatternKnob], field: key, line: s.knobLines[targets.PatternKnob], scenarioWide: true}, true
	}
	return patternSetting{}, false
}

// validatePattern checks the pattern of every target of the step that takes one against the
// step's methods. A pattern the file sets is wrong where it is set; the default one, on a method
// it does not carry, makes the method ask for the pattern that does.
func validatePattern(d *decoder, sc *Scenario, st *Step, field string, names, methods []string) {
	for _, n := range names {
		t, ok := sc.Target(n)
		if !ok || len(t.Patterns) == 0 {
			continue
		}
		set, given := patternSettingFor(sc, st, field, n)
		p, ok := t.Pattern(set.value)
		if !ok {
			continue // the knob's values are the target's patterns (targets.patternKnob)
		}
		m, ok := firstNotCarried(p, methods)
		switch {
		case !ok:
		case given && set.scenarioWide:
			d.add(set.line, set.field, "pattern %s (%s) needs method %s; step %s runs %s", p.Name, p.About, strings.Join(p.Methods, " or "), st.Name, m)
		case given:
			d.add(set.line, set.field, "pattern %s (%s) needs method %s", p.Name, p.About, strings.Join(p.Methods, " or "))
		case t.Implements(m):
			// A method the target lacks is refused by validateStep, whatever the pattern.
			want := t.PatternFor(m)
			d.add(st.line("method"), stepField(field, "method"), "method %s needs pattern %s on %s (servers.%s.knobs.%s: %s)", m, want, n, fieldKey(n), targets.PatternKnob, want)
		}
	}
}

// firstNotCarried is the first of methods that pattern p does not carry.
func firstNotCarried(p targets.Pattern, methods []string) (string, bool) {
	for _, m := range methods {
		if !contains(p.Methods, m) {
			return m, true
		}
	}
	return "", false
}
