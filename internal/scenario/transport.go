package scenario

import (
	"fmt"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/protobench/protobench/internal/targets"
)

// HTTP versions and body encodings a step can ask of an HTTP target. They apply to HTTP targets
// only: a gRPC target in the same step runs once, whatever the step's http_version and encoding.
const (
	HTTP1 = targets.HTTP1
	HTTP2 = targets.HTTP2 // cleartext HTTP/2 with prior knowledge (h2c)

	EncodingJSON     = targets.EncodingJSON
	EncodingProtobuf = targets.EncodingProtobuf
)

// HTTPVersions and Encodings list the accepted values; the first of each is the default.
var (
	HTTPVersions = []string{HTTP1, HTTP2}
	Encodings    = []string{EncodingJSON, EncodingProtobuf}
)

// httpVersionText decodes an HTTP version; YAML reads 2 as an integer and 1.1 as a float, so
// both plain and quoted forms are accepted.
func (d *decoder) httpVersion(n *yaml.Node, field string) (string, bool) {
	s, ok := d.text(n, field)
	if !ok {
		return "", false
	}
	switch s {
	case "1.1", "1":
		return HTTP1, true
	case "2", "2.0":
		return HTTP2, true
	}
	d.add(lineOf(n), field, "unknown HTTP version %q; expected 1.1 or 2 (cleartext HTTP/2, h2c)", clip(s))
	return "", false
}

func (d *decoder) encoding(n *yaml.Node, field string) (string, bool) {
	s, ok := d.str(n, field)
	if !ok {
		return "", false
	}
	if !contains(Encodings, s) {
		d.add(lineOf(n), field, "unknown encoding %q; expected one of %s", clip(s), strings.Join(Encodings, ", "))
		return "", false
	}
	return s, true
}

// transportHandlers adds the step keys of this file: in_flight, http_version and encoding.
func (d *decoder) transportHandlers(st *Step, h map[string]keyHandler) {
	h["in_flight"] = func(v *yaml.Node, f string) {
		st.pos["in_flight"] = lineOf(v)
		x, _ := d.integer(v, f, 1, maxConnections)
		st.InFlight = int(x)
	}
	h["http_version"] = func(v *yaml.Node, f string) {
		st.pos["http_version"] = lineOf(v)
		st.HTTPVersion, _ = d.httpVersion(v, f)
	}
	h["encoding"] = func(v *yaml.Node, f string) {
		st.pos["encoding"] = lineOf(v)
		st.Encoding, _ = d.encoding(v, f)
	}
}

// matrixTransportHandlers adds the matrix keys in_flight, http_version and encoding.
func (d *decoder) matrixTransportHandlers(m *Matrix, pos map[string]int, h map[string]keyHandler) {
	h["in_flight"] = func(v *yaml.Node, f string) {
		pos["matrix.in_flight"] = lineOf(v)
		seen := map[int64]bool{}
		d.list(v, f, func(item *yaml.Node, f string) {
			x, ok := d.integer(item, f, 1, maxConnections)
			if ok && seen[x] {
				d.add(lineOf(item), f, "value %d listed twice", x)
				return
			}
			if ok {
				seen[x] = true
				m.InFlight = append(m.InFlight, int(x))
			}
		})
	}
	strs := func(dst *[]string, key string, one func(*yaml.Node, string) (string, bool)) keyHandler {
		return func(v *yaml.Node, f string) {
			pos["matrix."+key] = lineOf(v)
			seen := map[string]bool{}
			d.list(v, f, func(item *yaml.Node, f string) {
				x, ok := one(item, f)
				if ok && seen[x] {
					d.add(lineOf(item), f, "value %s listed twice", x)
					return
				}
				if ok {
					seen[x] = true
					*dst = append(*dst, x)
				}
			})
		}
	}
	h["http_version"] = strs(&m.HTTPVersion, "http_version", d.httpVersion)
	h["encoding"] = strs(&m.Encoding, "encoding", d.encoding)
}

// validateTransport checks how in_flight, connections, concurrency, http_version and encoding
// fit together in one step.
func validateTransport(d *decoder, st *Step, field string) {
	sc := d.sc
	m := st.Matrix
	hasInFlight := st.InFlight > 0 || (m != nil && len(m.InFlight) > 0)
	hasConcurrency := st.Concurrency > 0 || (m != nil && len(m.Concurrency) > 0)
	if hasInFlight && hasConcurrency {
		d.add(st.line("in_flight"), stepField(field, "in_flight"),
			"in_flight and concurrency exclude each other: in_flight sets the requests in flight and each target's topology spreads them (give connections too to fix the topology)")
	}
	if st.InFlight > 0 && m != nil && len(m.InFlight) > 0 {
		d.add(st.line("matrix.in_flight"), stepField(field, "matrix.in_flight"), "in_flight is set on the step and in its matrix; keep one")
	}
	if st.HTTPVersion != "" && m != nil && len(m.HTTPVersion) > 0 {
		d.add(st.line("matrix.http_version"), stepField(field, "matrix.http_version"), "http_version is set on the step and in its matrix; keep one")
	}
	if st.Encoding != "" && m != nil && len(m.Encoding) > 0 {
		d.add(st.line("matrix.encoding"), stepField(field, "matrix.encoding"), "encoding is set on the step and in its matrix; keep one")
	}
	wantsHTTP := st.HTTPVersion != "" || st.Encoding != "" || (m != nil && (len(m.HTTPVersion) > 0 || len(m.Encoding) > 0))
	if wantsHTTP {
		any := false
		for _, v := range st.Variants() {
			for _, name := range v.Targets {
				t, _ := sc.Target(name)
				any = any || t.IsHTTP()
			}
		}
		if !any {
			key := "http_version"
			if st.HTTPVersion == "" && (m == nil || len(m.HTTPVersion) == 0) {
				key = "encoding"
			}
			d.add(st.line(key), stepField(field, key), "applies to HTTP targets only (%s), and this step has none", targets.HTTPTargets())
		}
	}
	if !hasInFlight {
		return
	}
	for _, v := range st.Variants() {
		for _, name := range v.Targets {
			t, _ := sc.Target(name)
			if _, _, err := v.topology(t, patternFor(sc, st, t)); err != nil {
				d.add(st.line("in_flight"), stepField(field, "in_flight"), "%s: %v", v.Name, err)
				return
			}
		}
	}
}

func stepField(field, key string) string { return field + "." + key }

// line is the line of key in the step, or the step's own line.
func (st *Step) line(key string) int {
	if l, ok := st.pos[key]; ok {
		return l
	}
	return st.Line
}

// topology resolves how a variant's requests in flight sit on connections for one target. With
// in_flight and no connections, each target gets its natural topology: one connection carrying
// every request where its transport multiplexes (a gRPC channel, HTTP/2), one connection per
// request where it cannot (HTTP/1.1). With connections given, in_flight is spread evenly.
func (v Variant) topology(target targets.Target, pattern string) (connections, concurrency int, err error) {
	if v.InFlight == 0 {
		return v.Connections, v.Concurrency, nil
	}
	mux := target.Multiplexes(v.HTTPVersion, pattern)
	if !v.ConnectionsSet {
		if mux {
			return 1, v.InFlight, nil
		}
		return v.InFlight, 1, nil
	}
	if v.Connections > v.InFlight || v.InFlight%v.Connections != 0 {
		return 0, 0, fmt.Errorf("in_flight %d does not spread evenly over %d connections", v.InFlight, v.Connections)
	}
	per := v.InFlight / v.Connections
	if per > 1 && !mux {
		return 0, 0, fmt.Errorf("%s cannot carry %d requests on one connection (HTTP/1.1 has one in flight per connection); use http_version: 2 or connections: %d", target.Name, per, v.InFlight)
	}
	return v.Connections, per, nil
}

// appliesTo reports whether a variant runs for target: a target that takes no http_version or
// encoding runs only for the first value of each, so a transport × encoding matrix measures a
// gRPC target in the same step once rather than four times.
func (v Variant) appliesTo(target targets.Target) bool {
	if target.IsHTTP() || v.Step == nil || v.Step.Matrix == nil {
		return true
	}
	m := v.Step.Matrix
	if len(m.HTTPVersion) > 0 && v.HTTPVersion != m.HTTPVersion[0] {
		return false
	}
	if len(m.Encoding) > 0 && v.Encoding != m.Encoding[0] {
		return false
	}
	return true
}

// nameFor is the variant's name for target: targets that take no http_version or encoding drop
// those suffixes.
func (v Variant) nameFor(target targets.Target) string {
	if target.IsHTTP() {
		return v.Name
	}
	return v.plainName
}

// TopologyText says in words how a run's requests sit on its connections, for summaries.
func (r Run) TopologyText() string {
	conn := func(n int, what string) string {
		if n == 1 {
			return "1 " + what
		}
		return fmt.Sprintf("%d %ss", n, what)
	}
	if r.Model == ModelOpen {
		return fmt.Sprintf("%s, open model at %s req/s", conn(r.Connections, "connection"), formatFloat(r.Rate))
	}
	if r.RequestsPerConnection > 0 {
		// A churning run gives each request in flight a connection of its own (loadgen's churn.go).
		return fmt.Sprintf("%s at a time, 1 request in flight on each, each closed after %s and replaced",
			conn(r.Connections*r.Concurrency, "connection"), conn(r.RequestsPerConnection, "request"))
	}
	switch {
	case r.Protocol == targets.GRPC:
		if r.Connections == 1 {
			return fmt.Sprintf("one gRPC channel (1 HTTP/2 connection) × %d streams", r.Concurrency)
		}
		return fmt.Sprintf("%s × %d streams each", conn(r.Connections, "gRPC channel"), r.Concurrency)
	case targets.OverHTTP[r.Protocol] && r.HTTPVersion == HTTP2:
		return fmt.Sprintf("%s × %d streams each", conn(r.Connections, "h2c connection"), r.Concurrency)
	case targets.OverHTTP[r.Protocol]:
		return fmt.Sprintf("%s, 1 request in flight on each", conn(r.Connections, "keep-alive HTTP/1.1 connection"))
	}
	return fmt.Sprintf("%s × %d in flight each", conn(r.Connections, "connection"), r.Concurrency)
}

// transportCompatible reports whether tool can drive an HTTP target over httpVersion with
// encoding (empty values mean the defaults); non-HTTP targets always pass.
func transportCompatible(tool string, target targets.Target, httpVersion, encoding string) (bool, string) {
	if !target.IsHTTP() {
		return true, ""
	}
	if httpVersion == "" {
		httpVersion = HTTP1
	}
	if encoding == "" {
		encoding = EncodingJSON
	}
	if c, _ := capabilities(tool); c.SendsHTTP(httpVersion, encoding) {
		return true, ""
	}
	return false, fmt.Sprintf("%s cannot send HTTP/%s with %s bodies", tool, httpVersion, encoding)
}
