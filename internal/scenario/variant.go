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
	// Compression is the variant's compression: "" (none, the default) or a targets.Compressions value.
	Compression string
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
		Compression:           st.Compression,
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
	out = expandAxis(out, m.Connections, func(v *Variant, x int) { v.Connections = x; v.Name += fmt.Sprintf("-conn%d", x) })
	out = expandAxis(out, m.Concurrency, func(v *Variant, x int) { v.Concurrency = x; v.Name += fmt.Sprintf("-c%d", x) })
	out = expandAxis(out, m.PayloadBytes, func(v *Variant, x int) {
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
	out = expandAxis(out, m.InFlight, func(v *Variant, x int) { v.InFlight = x; v.Name += fmt.Sprintf("-inflight%d", x) })
	out = expandLoad(out, st.RateFrom)
	for i := range out {
		out[i].plainName = out[i].Name
	}
	out = expandTLS(out, m.TLS)
	out = expandChurn(out, m.RequestsPerConnection)
	out = expandCompression(out, m.Compression)
	out = expandAxis(out, m.HTTPVersion, func(v *Variant, x string) { v.HTTPVersion = x; v.Name += "-h" + strings.TrimSuffix(x, ".1") })
	out = expandAxis(out, m.Encoding, func(v *Variant, x string) { v.Encoding = x; v.Name += "-" + x })
	return out
}

// expandLoad makes one variant per rate_from percentage, named -load25 and so on.
func expandLoad(in []Variant, rf *RateFrom) []Variant {
	if rf == nil {
		return in
	}
	return expandAxis(in, rf.Percent, func(v *Variant, p float64) {
		v.LoadPercent = p
		v.Name += "-load" + formatFloat(p)
	})
}

// expandAxis multiplies the variants by one matrix axis: each variant once per value, in order,
// set by set (which also names it). No values leave the variants as they are.
func expandAxis[T any](in []Variant, values []T, set func(*Variant, T)) []Variant {
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
	for _, l := range []int{len(st.Matrix.Connections), len(st.Matrix.Concurrency), len(st.Matrix.PayloadBytes), len(st.Matrix.Rate), len(st.Matrix.InFlight), len(st.Matrix.HTTPVersion), len(st.Matrix.Encoding), len(st.Matrix.TLS), len(st.Matrix.RequestsPerConnection), len(st.Matrix.Compression)} {
		if l > 0 {
			n *= l
			if n > maxVariants {
				return n
			}
		}
	}
	return n
}
