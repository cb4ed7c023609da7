package scenario

import (
	"fmt"
	"strings"
)

// Variant is one combination of a step's matrix: a step as it will run, before repeats.
type Variant struct {
	Name        string // base name plus one suffix per matrix dimension, e.g. sweep-conn200
	Step        *Step
	Targets     []string
	Tools       []string
	Connections int
	Concurrency int
	Rate        float64
	// LoadPercent is the share of the capacity step's slowest target this variant offers
	// (Step.RateFrom); Rate is then 0 until the run resolves it.
	LoadPercent  float64
	PayloadBytes int
	InFlight     int
	HTTPVersion  string // "" for the default
	Encoding     string
	TLS          bool
	// RequestsPerConnection is the variant's connection churn, 0 for none (Step).
	RequestsPerConnection int
	// ConnectionsSet says the file fixed connections; otherwise in_flight picks each target's
	// natural topology.
	ConnectionsSet bool
	plainName      string // Name without the http_version and encoding suffixes
}

// Variants expands the step's matrix in a fixed order (connections, concurrency, payload_bytes,
// rate, the later ones varying fastest). A step without a matrix has one variant.
func (st *Step) Variants() []Variant {
	base := Variant{
		Name: st.Name, Step: st,
		Targets: st.Targets, Tools: st.Tools,
		Connections: st.Connections, Concurrency: st.Concurrency,
		Rate: st.Rate, PayloadBytes: st.PayloadBytes,
		InFlight: st.InFlight, HTTPVersion: st.HTTPVersion, Encoding: st.Encoding, TLS: st.TLS,
		RequestsPerConnection: st.RequestsPerConnection,
		ConnectionsSet:        st.Connections > 0 || (st.Matrix != nil && len(st.Matrix.Connections) > 0),
	}
	if base.Connections == 0 {
		base.Connections = 1
	}
	if base.Concurrency == 0 {
		base.Concurrency = 1
	}
	m := st.Matrix
	if m != nil {
		if len(m.Targets) > 0 {
			base.Targets = m.Targets
		}
		if len(m.Tools) > 0 {
			base.Tools = m.Tools
		}
	}
	if len(base.Tools) == 0 {
		base.Tools = []string{ToolProtobench}
	}
	out := []Variant{base}
	if m == nil {
		out = expandLoad(out, st.RateFrom)
		for i := range out {
			out[i].plainName = out[i].Name
		}
		return out
	}
	// Each dimension multiplies the list; an empty dimension leaves it unchanged.
	out = expandInts(out, m.Connections, func(v *Variant, x int) { v.Connections = x; v.Name += fmt.Sprintf("-conn%d", x) })
	out = expandInts(out, m.Concurrency, func(v *Variant, x int) { v.Concurrency = x; v.Name += fmt.Sprintf("-c%d", x) })
	out = expandInts(out, m.PayloadBytes, func(v *Variant, x int) {
		v.PayloadBytes = x
		v.Name += "-p" + strings.ToLower(FormatSize(int64(x)))
	})
	if len(m.Rate) > 0 {
		var next []Variant
		for _, v := range out {
			for _, r := range m.Rate {
				w := v
				w.Rate = r
				w.Name += "-rate" + formatFloat(r)
				next = append(next, w)
			}
		}
		out = next
	}
	out = expandInts(out, m.InFlight, func(v *Variant, x int) { v.InFlight = x; v.Name += fmt.Sprintf("-inflight%d", x) })
	out = expandLoad(out, st.RateFrom)
	for i := range out {
		out[i].plainName = out[i].Name
	}
	out = expandTLS(out, m.TLS)
	out = expandChurn(out, m.RequestsPerConnection)
	out = expandStrings(out, m.HTTPVersion, func(v *Variant, x string) { v.HTTPVersion = x; v.Name += "-h" + strings.TrimSuffix(x, ".1") })
	out = expandStrings(out, m.Encoding, func(v *Variant, x string) { v.Encoding = x; v.Name += "-" + x })
	return out
}

// expandLoad makes one variant per rate_from percentage, named -load25 and so on.
func expandLoad(in []Variant, rf *RateFrom) []Variant {
	if rf == nil || len(rf.Percent) == 0 {
		return in
	}
	out := make([]Variant, 0, len(in)*len(rf.Percent))
	for _, v := range in {
		for _, p := range rf.Percent {
			w := v
			w.LoadPercent = p
			w.Name += "-load" + formatFloat(p)
			out = append(out, w)
		}
	}
	return out
}

func expandStrings(in []Variant, values []string, set func(*Variant, string)) []Variant {
	if len(values) == 0 {
		return in
	}
	out := make([]Variant, 0, len(in)*len(values))
	for _, v := range in {
		for _, x := range values {
			w := v
			set(&w, x)
			out = append(out, w)
		}
	}
	return out
}

func expandInts(in []Variant, values []int, set func(*Variant, int)) []Variant {
	if len(values) == 0 {
		return in
	}
	out := make([]Variant, 0, len(in)*len(values))
	for _, v := range in {
		for _, x := range values {
			w := v
			set(&w, x)
			out = append(out, w)
		}
	}
	return out
}

// matrixSize is the number of variants without building them, so a huge matrix is refused
// before it is expanded.
func (st *Step) matrixSize() int {
	n := 1
	if st.RateFrom != nil && len(st.RateFrom.Percent) > 0 {
		n = len(st.RateFrom.Percent)
	}
	if st.Matrix == nil {
		return n
	}
	for _, l := range []int{len(st.Matrix.Connections), len(st.Matrix.Concurrency), len(st.Matrix.PayloadBytes), len(st.Matrix.Rate), len(st.Matrix.InFlight), len(st.Matrix.HTTPVersion), len(st.Matrix.Encoding), len(st.Matrix.TLS), len(st.Matrix.RequestsPerConnection)} {
		if l > 0 {
			n *= l
			if n > maxVariants {
				return n
			}
		}
	}
	return n
}

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

func validateStep(d *decoder, sc *Scenario, st *Step, field string) {
	line := func(key string) int {
		if l, ok := st.pos[key]; ok {
			return l
		}
		return st.Line
	}
	at := func(key string) string { return field + "." + key }

	switch {
	case st.Method == "" && len(st.Mix) == 0:
		d.add(st.Line, field, "missing key \"method\" (or \"mix\" for several methods)")
		return
	case st.Method != "" && len(st.Mix) > 0:
		d.add(line("mix"), at("mix"), "give either method or mix, not both")
		return
	case len(st.Mix) > 0:
		st.Method = mixString(st.Mix)
	}

	m := st.Matrix
	if m != nil {
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
				d.add(line("matrix."+dup.key), at("matrix."+dup.key), "%s is given both on the step and in its matrix; keep one", dup.key)
			}
		}
		if n := st.matrixSize(); n > maxVariants {
			d.add(m.Line, at("matrix"), "expands to %d variants; at most %d are allowed", n, maxVariants)
			return
		}
	}
	if len(st.Targets) == 0 && (m == nil || len(m.Targets) == 0) {
		d.add(st.Line, field, "missing key \"targets\"")
		return
	}

	if st.Model == "" {
		st.Model = ModelClosed
	}
	hasRate := st.Rate > 0 || (m != nil && len(m.Rate) > 0)
	if rf := st.RateFrom; rf != nil {
		validateRateFrom(d, sc, st, hasRate, line("rate_from"), at("rate_from"))
		hasRate = true
	}
	rateLine, rateField := line("rate"), at("rate")
	if st.Rate == 0 && hasRate {
		rateLine, rateField = line("matrix.rate"), at("matrix.rate")
	}
	switch {
	case st.Model == ModelOpen && !hasRate:
		d.add(line("model"), at("model"), "model open needs a rate (requests per second, on the step or in its matrix)")
	case st.Model == ModelClosed && hasRate:
		d.add(rateLine, rateField, "rate applies to model: open only; a closed loop sends as fast as responses return")
	}

	v := st.Variants()[0]
	toolsKey, targetsKey := "tools", "targets"
	if m != nil && len(m.Tools) > 0 {
		toolsKey = "matrix.tools"
	}
	if m != nil && len(m.Targets) > 0 {
		targetsKey = "matrix.targets"
	}
	for i, tool := range v.Tools {
		tf, tl := fmt.Sprintf("%s[%d]", at(toolsKey), i), line(fmt.Sprintf("%s[%d]", toolsKey, i))
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

	methods := []string{st.Method}
	if len(st.Mix) > 0 {
		methods = sortedKeys(st.Mix)
	}
	validatePattern(d, sc, st, field, v.Targets, methods)

	for i, t := range v.Targets {
		tf, tl := fmt.Sprintf("%s[%d]", at(targetsKey), i), line(fmt.Sprintf("%s[%d]", targetsKey, i))
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

	payloads := []int{st.PayloadBytes}
	if m != nil && len(m.PayloadBytes) > 0 {
		payloads = m.PayloadBytes
	}
	payloadKey := "payload_bytes"
	if m != nil && len(m.PayloadBytes) > 0 {
		payloadKey = "matrix.payload_bytes"
	}
	maxPayload := 0
	for _, p := range payloads {
		maxPayload = max(maxPayload, p)
	}
	if maxPayload > 0 && !isPayloadMethod(st.Method, st.Mix) {
		d.add(line(payloadKey), at(payloadKey), "payload_bytes applies to Echo, EchoStream and Publish only, not %s", st.Method)
	}
	for _, t := range v.Targets {
		if limit := maxPayloadFor(knobsFor(sc, st, t)); int64(maxPayload) > limit {
			d.add(line(payloadKey), at(payloadKey), "payload %s exceeds %s's max_payload_bytes %s; raise the knob", FormatSize(int64(maxPayload)), t, FormatSize(limit))
		}
	}

	if st.Baseline != "" && !contains(v.Targets, st.Baseline) {
		d.add(line("baseline"), at("baseline"), "baseline %s is not among the step's targets (%s)", st.Baseline, strings.Join(v.Targets, ", "))
	}
	for _, t := range sortedKeys(st.Servers) {
		if !contains(v.Targets, t) {
			d.add(line("servers"), at("servers."+t), "the step does not run target %s", t)
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
