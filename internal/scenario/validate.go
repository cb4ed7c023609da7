package scenario

import (
	"fmt"
	"strings"
)

// compatible reports whether tool can drive target, and why not.
func (s *Scenario) compatible(tool, target string) (bool, string) {
	c, ok := capabilities(tool)
	if !ok {
		return false, "unknown tool"
	}
	t, ok := s.Target(target)
	if !ok {
		return false, "unknown target"
	}
	if !c.Speaks(t.Protocol) {
		return false, c.Limits
	}
	if own := s.Custom[target]; own != nil && own.Request != nil && !c.Requests {
		return false, tool + " cannot send a custom target's own request"
	}
	return true, ""
}

// anyOwnRequest reports whether one of the targets is a custom target with a request of its own,
// whose method name is the user's rather than the contract's.
func (s *Scenario) anyOwnRequest(names []string) bool {
	for _, n := range names {
		if c := s.Custom[n]; c != nil && c.Request != nil {
			return true
		}
	}
	return false
}

// knobsFor merges the scenario's and the step's knobs for target; the step wins.
func knobsFor(sc *Scenario, st *Step, target string) map[string]string {
	out := map[string]string{}
	for k, v := range sc.Servers[target].Knobs {
		out[k] = v
	}
	if st != nil {
		for k, v := range st.Servers[target].Knobs {
			out[k] = v
		}
	}
	return out
}

// validate checks what single keys cannot: how the fields of a step and the published figures
// fit together. It also fills defaults that depend on other fields (model, mix method).
func validate(d *decoder, sc *Scenario) {
	names := map[string]int{}
	for i := range sc.Steps {
		st := &sc.Steps[i]
		field := fmt.Sprintf("steps[%d]", i)
		if st.Name != "" {
			if prev, dup := names[st.Name]; dup {
				d.add(st.Line, field+".name", "step name %q already used at line %d", st.Name, prev)
			}
			names[st.Name] = st.Line
		}
		validateStep(d, sc, st, field)
		if st.matrixSize() <= maxVariants {
			validateTransport(d, st, field)
			validateTLS(d, sc, st, field)
			validateChurn(d, sc, st, field)
			validateCompression(d, sc, st, field)
		}
	}
	variantNames := map[string]string{}
	for i := range sc.Steps {
		st := &sc.Steps[i]
		if st.matrixSize() > maxVariants {
			continue
		}
		for _, v := range st.Variants() {
			if other, dup := variantNames[v.Name]; dup && other != st.Name {
				d.add(st.Line, fmt.Sprintf("steps[%d].name", i), "expanded step name %q collides with a variant of step %q; rename one", v.Name, other)
			}
			variantNames[v.Name] = st.Name
		}
	}
	if sc.Published != nil {
		validateFigures(d, sc)
	}
}

// stepKeys places a step's keys for error messages: the line of a key (the step's own line when
// the key was not written) and its full field path.
type stepKeys struct {
	st    *Step
	field string
}

func (k stepKeys) line(key string) int {
	if l, ok := k.st.pos[key]; ok {
		return l
	}
	return k.st.Line
}

func (k stepKeys) at(key string) string { return k.field + "." + key }

// indexed is the line and field of element i of a list key such as tools or matrix.targets.
func (k stepKeys) indexed(key string, i int) (int, string) {
	return k.line(fmt.Sprintf("%s[%d]", key, i)), fmt.Sprintf("%s[%d]", k.at(key), i)
}

// validateStep checks one step: what it sends, its matrix, its targets, the load model, then
// how tools, targets and payloads fit. A missing method or targets, or a matrix too large to
// expand, ends the step's checks: the later ones would only repeat the fault.
func validateStep(d *decoder, sc *Scenario, st *Step, field string) {
	k := stepKeys{st: st, field: field}
	if !validateMethodOrMix(d, st, k) || !validateMatrixKeys(d, st, k) {
		return
	}
	if len(st.Targets) == 0 && (st.Matrix == nil || len(st.Matrix.Targets) == 0) {
		d.add(st.Line, field, "missing key \"targets\"")
		return
	}
	hasRate := validateModel(d, sc, st, k)
	v := st.Variants()[0]
	validateTools(d, sc, st, k, v, hasRate)
	methods := []string{st.Method}
	if len(st.Mix) > 0 {
		methods = sortedKeys(st.Mix)
	}
	validatePattern(d, sc, st, field, v.Targets, methods)
	validateTargets(d, sc, st, k, v, methods)
	validatePayload(d, sc, st, k, v)
	validateStepTargetRefs(d, st, k, v)
}

// validateMethodOrMix requires exactly one of method and mix, and names a mix's method string.
func validateMethodOrMix(d *decoder, st *Step, k stepKeys) bool {
	switch {
	case st.Method == "" && len(st.Mix) == 0:
		d.add(st.Line, k.field, "missing key \"method\" (or \"mix\" for several methods)")
		return false
	case st.Method != "" && len(st.Mix) > 0:
		d.add(k.line("mix"), k.at("mix"), "give either method or mix, not both")
		return false
	case len(st.Mix) > 0:
		st.Method = mixString(st.Mix)
	}
	return true
}

// validateMatrixKeys refuses a key given both on the step and in its matrix, and a matrix too
// large to expand; it returns false for the latter.
func validateMatrixKeys(d *decoder, st *Step, k stepKeys) bool {
	m := st.Matrix
	if m == nil {
		return true
	}
	for _, dup := range []struct {
		key              string
		onStep, inMatrix bool
	}{
		{"targets", len(st.Targets) > 0, len(m.Targets) > 0},
		{"tools", len(st.Tools) > 0, len(m.Tools) > 0},
		{"connections", st.Connections > 0, len(m.Connections) > 0},
		{"concurrency", st.Concurrency > 0, len(m.Concurrency) > 0},
		{"payload_bytes", hasKey(st.pos, "payload_bytes"), len(m.PayloadBytes) > 0},
		{"rate", st.Rate > 0, len(m.Rate) > 0},
	} {
		if dup.onStep && dup.inMatrix {
			d.add(k.line("matrix."+dup.key), k.at("matrix."+dup.key), "%s is given both on the step and in its matrix; keep one", dup.key)
		}
	}
	if n := st.matrixSize(); n > maxVariants {
		d.add(m.Line, k.at("matrix"), "expands to %d variants; at most %d are allowed", n, maxVariants)
		return false
	}
	return true
}

// validateModel defaults the model to closed and checks it agrees with the step's rates
// (rate, matrix.rate or rate_from). It reports whether the step has a rate.
func validateModel(d *decoder, sc *Scenario, st *Step, k stepKeys) bool {
	m := st.Matrix
	if st.Model == "" {
		st.Model = ModelClosed
	}
	hasRate := st.Rate > 0 || (m != nil && len(m.Rate) > 0)
	if rf := st.RateFrom; rf != nil {
		validateRateFrom(d, sc, st, hasRate, k.line("rate_from"), k.at("rate_from"))
		hasRate = true
	}
	rateLine, rateField := k.line("rate"), k.at("rate")
	if st.Rate == 0 && hasRate {
		rateLine, rateField = k.line("matrix.rate"), k.at("matrix.rate")
	}
	switch {
	case st.Model == ModelOpen && !hasRate:
		d.add(k.line("model"), k.at("model"), "model open needs a rate (requests per second, on the step or in its matrix)")
	case st.Model == ModelClosed && hasRate:
		d.add(rateLine, rateField, "rate applies to model: open only; a closed loop sends as fast as responses return")
	}
	return hasRate
}

// validateTools checks each tool of the step can drive one of its targets with the step's model
// and methods.
func validateTools(d *decoder, sc *Scenario, st *Step, k stepKeys, v Variant, hasRate bool) {
	toolsKey := "tools"
	if st.Matrix != nil && len(st.Matrix.Tools) > 0 {
		toolsKey = "matrix.tools"
	}
	for i, tool := range v.Tools {
		tl, tf := k.indexed(toolsKey, i)
		info, _ := capabilities(tool)
		speaks := false
		for _, t := range v.Targets {
			if ok, _ := sc.compatible(tool, t); ok {
				speaks = true
			}
		}
		switch {
		case !speaks:
			d.add(tl, tf, "%s cannot drive %s: %s", tool, strings.Join(v.Targets, ", "), info.Limits)
		case hasRate && !info.Runs(ModelOpen):
			d.add(tl, tf, "%s is closed-loop only and cannot take a rate: %s; use %s for model open", tool, info.Limits, toolsThatRun(ModelOpen))
		case !hasRate && !info.Runs(ModelClosed):
			d.add(tl, tf, "%s needs a rate (model open): %s; use %s for the closed model", tool, info.Limits, toolsThatRun(ModelClosed))
		case len(st.Mix) > 0 && !info.Mix:
			d.add(tl, tf, "%s cannot run a mix of methods; only protobench can", tool)
		case len(st.Mix) == 0 && !info.Sends(st.Method) && !(info.Requests && sc.anyOwnRequest(v.Targets)):
			d.add(tl, tf, "%s cannot send method %s: %s", tool, st.Method, info.Limits)
		}
	}
}

// validateTargets checks each target implements the step's methods and some tool of the step
// can drive it.
func validateTargets(d *decoder, sc *Scenario, st *Step, k stepKeys, v Variant, methods []string) {
	targetsKey := "targets"
	if st.Matrix != nil && len(st.Matrix.Targets) > 0 {
		targetsKey = "matrix.targets"
	}
	for i, t := range v.Targets {
		tl, tf := k.indexed(targetsKey, i)
		target, _ := sc.Target(t)
		for _, method := range methods {
			if !target.Implements(method) {
				d.add(tl, tf, "%s does not implement method %s; it has %s", t, method, strings.Join(target.Methods, ", "))
			}
		}
		drivable := false
		for _, tool := range v.Tools {
			if ok, _ := sc.compatible(tool, t); ok {
				drivable = true
			}
		}
		if !drivable {
			d.add(tl, tf, "no tool of this step can drive %s; add protobench", t)
		}
	}
}

// validatePayload checks the largest payload suits the step's methods and every target's
// max_payload_bytes knob.
func validatePayload(d *decoder, sc *Scenario, st *Step, k stepKeys, v Variant) {
	payloads, payloadKey := []int{st.PayloadBytes}, "payload_bytes"
	if m := st.Matrix; m != nil && len(m.PayloadBytes) > 0 {
		payloads, payloadKey = m.PayloadBytes, "matrix.payload_bytes"
	}
	maxPayload := 0
	for _, p := range payloads {
		maxPayload = max(maxPayload, p)
	}
	if maxPayload > 0 && !isPayloadMethod(st.Method, st.Mix) {
		d.add(k.line(payloadKey), k.at(payloadKey), "payload_bytes applies to Echo, EchoStream and Publish only, not %s", st.Method)
	}
	for _, t := range v.Targets {
		if limit := maxPayloadFor(knobsFor(sc, st, t)); int64(maxPayload) > limit {
			d.add(k.line(payloadKey), k.at(payloadKey), "payload %s exceeds %s's max_payload_bytes %s; raise the knob", FormatSize(int64(maxPayload)), t, FormatSize(limit))
		}
	}
}

// validateStepTargetRefs checks that baseline and the servers keys name targets the step runs.
func validateStepTargetRefs(d *decoder, st *Step, k stepKeys, v Variant) {
	if st.Baseline != "" && !contains(v.Targets, st.Baseline) {
		d.add(k.line("baseline"), k.at("baseline"), "baseline %s is not among the step's targets (%s)", st.Baseline, strings.Join(v.Targets, ", "))
	}
	for _, t := range sortedKeys(st.Servers) {
		if !contains(v.Targets, t) {
			d.add(k.line("servers"), k.at("servers."+t), "the step does not run target %s", t)
		}
	}
}

func hasKey(m map[string]int, k string) bool {
	_, ok := m[k]
	return ok
}

func stepNames(sc *Scenario) []string {
	names := make([]string, len(sc.Steps))
	for i, st := range sc.Steps {
		names[i] = st.Name
	}
	return names
}

// validateRateFrom checks rate_from: it names an earlier closed-loop step without a matrix (its
// repeats are one cell per target), measured on every target of this step, and it is the only
// source of the step's rates.
func validateRateFrom(d *decoder, sc *Scenario, st *Step, hasRate bool, line int, field string) {
	rf := st.RateFrom
	if hasRate {
		d.add(line, field, "rate_from and rate (or matrix.rate) both set the rates; keep one")
	}
	if rf.Step == "" {
		return
	}
	var from *Step
	for i := range sc.Steps {
		if sc.Steps[i].Name == st.Name {
			break
		}
		if sc.Steps[i].Name == rf.Step {
			from = &sc.Steps[i]
		}
	}
	switch {
	case from == nil:
		d.add(line, field+".step", "no step %q before this one; rate_from needs an earlier closed-loop step of the same file", clip(rf.Step))
	case from.Model == ModelOpen || from.RateFrom != nil:
		d.add(line, field+".step", "step %q runs the open model; its throughput is the rate it was given, not a capacity", rf.Step)
	case from.Matrix != nil:
		d.add(line, field+".step", "step %q has a matrix; rate_from needs one capacity per target, so name a step without one", rf.Step)
	default:
		for _, t := range st.Targets {
			if !contains(from.Targets, t) {
				d.add(line, field+".step", "step %q does not measure target %s, so it cannot give its capacity", rf.Step, t)
			}
		}
	}
}
