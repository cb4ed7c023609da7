package scenario

import (
	"fmt"
	"strconv"

	"go.yaml.in/yaml/v3"
)

// tlsHandlers adds the step key tls: true serves the step's targets over TLS with certificates
// made for the run (the target registry says how each server does it).
func (d *decoder) tlsHandlers(st *Step, h map[string]keyHandler) {
	h["tls"] = func(v *yaml.Node, f string) {
		st.pos["tls"] = lineOf(v)
		st.TLS, _ = d.boolean(v, f)
	}
}

// matrixTLSHandlers adds the matrix key tls: [false, true], one variant each.
func (d *decoder) matrixTLSHandlers(m *Matrix, pos map[string]int, h map[string]keyHandler) {
	h["tls"] = uniqueAxis(d, pos, "tls", &m.TLS, d.boolean, strconv.FormatBool)
}

// expandTLS multiplies the variants by the matrix's tls values; a TLS variant's name ends in
// -tls and a cleartext one's in -clear, so both sit side by side in one step.
func expandTLS(in []Variant, values []bool) []Variant {
	return expandAxis(in, values, func(v *Variant, x bool) {
		v.TLS = x
		suffix := "-clear"
		if x {
			suffix = "-tls"
		}
		v.Name += suffix
		v.plainName += suffix
	})
}

// validateTLS refuses a TLS step on a target or tool that cannot speak it, naming why.
func validateTLS(d *decoder, sc *Scenario, st *Step, field string) {
	wants := st.TLS || (st.Matrix != nil && containsBool(st.Matrix.TLS, true))
	if !wants {
		return
	}
	line := st.line("tls")
	if line == 0 && st.Matrix != nil {
		line = st.Matrix.Line
	}
	for _, v := range st.Variants() {
		if !v.TLS {
			continue
		}
		for _, name := range v.Targets {
			if _, custom := sc.Custom[name]; custom {
				d.add(line, stepField(field, "tls"), "custom target %s: TLS is for the reference servers only", name)
				continue
			}
			t, ok := sc.Target(name)
			if ok && t.TLS == nil {
				d.add(line, stepField(field, "tls"), "target %s does not serve TLS: %s", name, t.NoTLS)
			}
		}
		for _, tl := range v.Tools {
			if c, ok := capabilities(tl); ok && !c.TLS {
				d.add(line, stepField(field, "tls"), "tool %s cannot drive TLS; tools that can: %s", tl, toolsWithTLS())
			}
		}
		return
	}
}

func containsBool(xs []bool, x bool) bool {
	for _, v := range xs {
		if v == x {
			return true
		}
	}
	return false
}

func toolsWithTLS() string {
	var out []string
	for _, n := range Tools {
		if c, _ := capabilities(n); c.TLS {
			out = append(out, n)
		}
	}
	return fmt.Sprint(out)
}
