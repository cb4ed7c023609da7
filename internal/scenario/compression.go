package scenario

import (
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/protobench/protobench/internal/targets"
)

// Compression values of a step (targets.Compressions); none is the default.
const (
	CompressionNone = targets.CompressionNone
	CompressionGzip = targets.CompressionGzip
)

// compressionHandlers adds the step key compression: none (the default: no client advertises a
// compressor and no server compresses) or gzip (clients compress requests and accept compressed
// replies, servers compress replies). It is a setting, never a side effect of a library: the
// connect-vs-grpc cells once measured connect-go gzipping every reply because our client
// advertised gzip (docs/connect.md).
func (d *decoder) compressionHandlers(st *Step, h map[string]keyHandler) {
	h["compression"] = func(v *yaml.Node, f string) {
		st.pos["compression"] = lineOf(v)
		st.Compression, _ = d.compression(v, f)
	}
}

// matrixCompressionHandlers adds the matrix key compression: [none, gzip].
func (d *decoder) matrixCompressionHandlers(m *Matrix, pos map[string]int, h map[string]keyHandler) {
	h["compression"] = uniqueAxis(d, pos, "compression", &m.Compression, d.compression, func(s string) string { return s })
}

func (d *decoder) compression(n *yaml.Node, field string) (string, bool) {
	s, ok := d.str(n, field)
	if !ok {
		return "", false
	}
	if !contains(targets.Compressions, s) {
		d.add(lineOf(n), field, "unknown compression %q; expected one of %s", clip(s), strings.Join(targets.Compressions, ", "))
		return "", false
	}
	return s, true
}

// expandCompression multiplies the variants by the matrix's compression values, named -none
// and -gzip.
func expandCompression(in []Variant, values []string) []Variant {
	return expandAxis(in, values, func(v *Variant, x string) {
		v.Compression = x
		v.Name += "-" + x
		v.plainName += "-" + x
	})
}

// validateCompression refuses compression on the step and in its matrix at once, and gzip on a
// target that cannot compress or with a tool that cannot compress that target's protocol.
func validateCompression(d *decoder, sc *Scenario, st *Step, field string) {
	m := st.Matrix
	key := "compression"
	if m != nil && len(m.Compression) > 0 {
		key = "matrix.compression"
		if hasKey(st.pos, "compression") {
			d.add(st.line(key), stepField(field, key), "compression is set on the step and in its matrix; keep one")
		}
	}
	line := st.line(key)
	for _, v := range st.Variants() {
		if v.Compression != CompressionGzip {
			continue
		}
		for _, name := range v.Targets {
			if _, custom := sc.Custom[name]; custom {
				d.add(line, stepField(field, key), "custom target %s: compression gzip is for the reference servers only (the runner cannot tell a server of yours to compress)", name)
				continue
			}
			t, ok := sc.Target(name)
			if !ok {
				continue
			}
			if t.Gzip == "" {
				d.add(line, stepField(field, key), "target %s cannot compress: %s; targets that can: %s", name, t.NoGzip, targets.GzipTargets())
				continue
			}
			for _, tl := range v.Tools {
				c, ok := capabilities(tl)
				if !ok {
					continue
				}
				if ok, _ := sc.compatible(tl, name); !ok {
					continue
				}
				if !c.Gzips(t.Protocol) {
					d.add(line, stepField(field, key), "tool %s cannot compress %s requests (target %s); tools that can: %s",
						tl, targets.ProtocolTitle(t.Protocol), name, toolsThatGzip(t.Protocol))
				}
			}
		}
		return
	}
}

// toolsThatGzip lists, for a message, the tools that can run gzip on protocol.
func toolsThatGzip(protocol string) string {
	var out []string
	for _, n := range Tools {
		if c, _ := capabilities(n); c.Gzips(protocol) {
			out = append(out, n)
		}
	}
	if len(out) == 0 {
		return "none"
	}
	return strings.Join(out, ", ")
}
