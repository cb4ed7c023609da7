package scenario

import (
	"fmt"
	"math"
	"sort"
	"strings"

	"go.yaml.in/yaml/v3"
)

// Published is what the article behind a scenario claimed, so the summary can put it beside ours.
type Published struct {
	Title       string
	Hardware    Hardware
	Method      string   // the article's method in one line, e.g. "wrk closed loop, 100 connections"
	Differences []string // how its method differs from ours, one line each
	Figures     []Figure
}

// Hardware is where the article measured.
type Hardware struct {
	Description string
	Cores       int // cores of the machine; 0 when the article does not say
	ServerCores int // cores the server could use, when the article limited it (e.g. GOMAXPROCS 4)
}

// Figure is one published number and the step, target and metric of ours it compares with.
type Figure struct {
	Name     string
	Measures string // what the number measures, in the article's terms
	Value    float64
	Unit     string // one of Units; ours is converted to it for display
	Metric   string // one of Metrics; empty for a figure we only cite
	Step     string // base step name
	Target   string
	Tool     string             // default: the step's first tool (the primary)
	Match    map[string]float64 // connections, concurrency, payload_bytes, rate, ...: pick variants
	Versus   map[string]float64 // a gain metric's divisor: each matched variant with these values instead
	At       string             // "max" or "knee": when several variants match, pick one
	Cores    int                // overrides the hardware's cores for this figure's per-core value
	Note     string             // one line on how the article's method differs for this figure
	Line     int
}

// Figure selectors for At.
const (
	AtMax  = "max"
	AtKnee = "knee"
)

// Metric names a figure can compare with; each is computed from a record.Record.
const (
	MetricThroughputRPS     = "throughput_rps"
	MetricThroughputMBs     = "throughput_mb_s" // throughput_rps × payload_bytes / 10^6
	MetricLatencyMeanMs     = "latency_mean_ms"
	MetricLatencyP50Ms      = "latency_p50_ms"
	MetricLatencyP90Ms      = "latency_p90_ms"
	MetricLatencyP99Ms      = "latency_p99_ms"
	MetricLatencyP999Ms     = "latency_p999_ms"
	MetricLatencyMaxMs      = "latency_max_ms"
	MetricServerCPUPercent  = "server_cpu_percent" // ours: percent of the server's CPU cap
	MetricServerMemMaxBytes = "server_mem_max_bytes"
	MetricCPUMicrosPerReq   = "cpu_us_per_request"
	// MetricThroughputGainPercent is not read from one record: it is the throughput of the
	// variants the figure's match picks over that of the variants its versus picks, less 1, in
	// percent (an article's "reuse gives +18 % QPS").
	MetricThroughputGainPercent = "throughput_gain_percent"
)

// Dimensions of metrics and units; a figure's unit must have its metric's dimension.
const (
	dimRate      = "rate"      // canonical: per second
	dimBandwidth = "bandwidth" // canonical: MB/s (10^6 bytes)
	dimTime      = "time"      // canonical: milliseconds
	dimPercent   = "percent"   // canonical: %
	dimBytes     = "bytes"     // canonical: bytes
)

var metricDims = map[string]string{
	MetricThroughputRPS:     dimRate,
	MetricThroughputMBs:     dimBandwidth,
	MetricLatencyMeanMs:     dimTime,
	MetricLatencyP50Ms:      dimTime,
	MetricLatencyP90Ms:      dimTime,
	MetricLatencyP99Ms:      dimTime,
	MetricLatencyP999Ms:     dimTime,
	MetricLatencyMaxMs:      dimTime,
	MetricServerCPUPercent:  dimPercent,
	MetricServerMemMaxBytes: dimBytes,
	MetricCPUMicrosPerReq:   dimTime,

	MetricThroughputGainPercent: dimPercent,
}

// Metrics lists the metric names a figure may use, sorted.
var Metrics = sortedKeys(metricDims)

type unitInfo struct {
	dim    string
	factor float64 // value in this unit × factor = value in the canonical unit
}

// units are the units a published figure may be written in. Byte units here are the display
// units articles use (KB = 1000 bytes), as in scenario sizes.
var units = map[string]unitInfo{
	"req/s": {dimRate, 1}, "msg/s": {dimRate, 1},
	"MB/s": {dimBandwidth, 1}, "GB/s": {dimBandwidth, 1000}, "MiB/s": {dimBandwidth, 1.048576},
	"ms": {dimTime, 1}, "s": {dimTime, 1000}, "us": {dimTime, 0.001},
	"%":     {dimPercent, 1},
	"bytes": {dimBytes, 1}, "KB": {dimBytes, 1e3}, "MB": {dimBytes, 1e6}, "GB": {dimBytes, 1e9},
	"KiB": {dimBytes, 1 << 10}, "MiB": {dimBytes, 1 << 20}, "GiB": {dimBytes, 1 << 30},
}

// Units lists the units a figure may use, sorted.
var Units = sortedKeys(units)

// MetricUnit is the canonical unit a metric is computed in.
func MetricUnit(metric string) string {
	switch metricDims[metric] {
	case dimRate:
		return "req/s"
	case dimBandwidth:
		return "MB/s"
	case dimTime:
		if metric == MetricCPUMicrosPerReq {
			return "us"
		}
		return "ms"
	case dimPercent:
		return "%"
	case dimBytes:
		return "bytes"
	}
	return ""
}

// PerCore reports whether dividing the metric by a core count means something: it does for
// work done per second, not for latencies or percentages.
func PerCore(metric string) bool {
	d := metricDims[metric]
	return d == dimRate || d == dimBandwidth
}

// InUnit converts a value of the figure's metric, in the metric's canonical unit (see
// MetricUnit), to the figure's unit so that ours and theirs print side by side.
func (f Figure) InUnit(canonical float64) float64 {
	u, ok := units[f.Unit]
	if !ok || u.factor == 0 {
		return canonical
	}
	from := units[MetricUnit(f.Metric)].factor
	if from == 0 {
		from = 1
	}
	return canonical * from / u.factor
}

// CoresFor is the core count the figure was measured on: the figure's own, the server's share
// of the published hardware, or the whole machine; 0 when unknown.
func (p *Published) CoresFor(f Figure) int {
	switch {
	case f.Cores > 0:
		return f.Cores
	case p.Hardware.ServerCores > 0:
		return p.Hardware.ServerCores
	}
	return p.Hardware.Cores
}

func (d *decoder) decodePublished(n *yaml.Node, field string) *Published {
	p := &Published{}
	seen := d.mapping(n, field, map[string]keyHandler{
		"title":    func(v *yaml.Node, f string) { p.Title, _ = d.str(v, f) },
		"method":   func(v *yaml.Node, f string) { p.Method, _ = d.str(v, f) },
		"hardware": func(v *yaml.Node, f string) { p.Hardware = d.decodeHardware(v, f) },
		"differences": func(v *yaml.Node, f string) {
			d.list(v, f, func(item *yaml.Node, f string) {
				if s, ok := d.str(item, f); ok {
					p.Differences = append(p.Differences, s)
				}
			})
		},
		"figures": func(v *yaml.Node, f string) {
			d.list(v, f, func(item *yaml.Node, f string) {
				p.Figures = append(p.Figures, d.decodeFigure(item, f))
			})
		},
	})
	d.require(n, field, seen, "hardware", "method", "figures")
	return p
}

func (d *decoder) decodeHardware(n *yaml.Node, field string) Hardware {
	var h Hardware
	seen := d.mapping(n, field, map[string]keyHandler{
		"description": func(v *yaml.Node, f string) { h.Description, _ = d.str(v, f) },
		"cores": func(v *yaml.Node, f string) {
			x, _ := d.integer(v, f, 1, 4096)
			h.Cores = int(x)
		},
		"server_cores": func(v *yaml.Node, f string) {
			x, _ := d.integer(v, f, 1, 4096)
			h.ServerCores = int(x)
		},
	})
	d.require(n, field, seen, "description")
	return h
}

func (d *decoder) decodeFigure(n *yaml.Node, field string) Figure {
	fig := Figure{Line: lineOf(n)}
	seen := d.mapping(n, field, map[string]keyHandler{
		"name":     func(v *yaml.Node, f string) { fig.Name, _ = d.str(v, f) },
		"measures": func(v *yaml.Node, f string) { fig.Measures, _ = d.str(v, f) },
		"value":    func(v *yaml.Node, f string) { fig.Value, _ = d.number(v, f, 0, 1e15, false) },
		"unit": func(v *yaml.Node, f string) {
			if s, ok := d.str(v, f); ok {
				if _, known := units[s]; !known {
					d.add(lineOf(v), f, "unknown unit %q; expected one of %s", clip(s), strings.Join(Units, ", "))
					return
				}
				fig.Unit = s
			}
		},
		"metric": func(v *yaml.Node, f string) {
			if s, ok := d.str(v, f); ok {
				if _, known := metricDims[s]; !known {
					d.add(lineOf(v), f, "unknown metric %q; expected one of %s", clip(s), strings.Join(Metrics, ", "))
					return
				}
				fig.Metric = s
			}
		},
		"step":   func(v *yaml.Node, f string) { fig.Step, _ = d.str(v, f) },
		"target": func(v *yaml.Node, f string) { fig.Target, _ = d.str(v, f) },
		"tool":   func(v *yaml.Node, f string) { fig.Tool, _ = d.str(v, f) },
		"match":  func(v *yaml.Node, f string) { fig.Match = d.decodeMatch(v, f) },
		"versus": func(v *yaml.Node, f string) { fig.Versus = d.decodeMatch(v, f) },
		"at": func(v *yaml.Node, f string) {
			if s, ok := d.str(v, f); ok {
				if s != AtMax && s != AtKnee {
					d.add(lineOf(v), f, "expected max or knee, got %q", clip(s))
					return
				}
				fig.At = s
			}
		},
		"cores": func(v *yaml.Node, f string) {
			x, _ := d.integer(v, f, 1, 4096)
			fig.Cores = int(x)
		},
		"note": func(v *yaml.Node, f string) { fig.Note, _ = d.str(v, f) },
	})
	d.require(n, field, seen, "name", "measures", "value", "unit")
	if seen != nil && fig.Metric != "" {
		d.require(n, field, seen, "step", "target")
	}
	if seen != nil {
		d.checkVersus(fig, seen, field)
	}
	return fig
}

// decodeMatch decodes a figure's match or versus: the values that pick variants of a swept
// step. requests_per_connection takes forever (0) as the matrix does.
func (d *decoder) decodeMatch(n *yaml.Node, field string) map[string]float64 {
	m := map[string]float64{}
	handlers := map[string]keyHandler{}
	for _, key := range matchKeys {
		handlers[key] = func(v *yaml.Node, f string) {
			var x float64
			var ok bool
			switch key {
			case "payload_bytes":
				var b int64
				b, ok = d.size(v, f, 0)
				x = float64(b)
			case "requests_per_connection":
				var c int
				c, ok = d.requestsPerConnection(v, f)
				x = float64(c)
			default:
				x, ok = d.number(v, f, 0, maxRate, true)
			}
			if ok {
				m[key] = x
			}
		}
	}
	d.mapping(n, field, handlers)
	return m
}

// checkVersus refuses a gain figure without versus (it would have nothing to divide by) and
// versus on any other metric (which compares one variant, not two).
func (d *decoder) checkVersus(fig Figure, seen map[string]*yaml.Node, field string) {
	at, hasVersus := seen["versus"]
	_, hasMetric := seen["metric"]
	switch {
	case fig.Metric == MetricThroughputGainPercent && !hasVersus:
		d.add(fig.Line, field+".versus", "metric %s needs versus, the variant it divides by, e.g. versus: {requests_per_connection: 1}",
			MetricThroughputGainPercent)
	case hasVersus && fig.Metric != MetricThroughputGainPercent && (fig.Metric != "" || !hasMetric):
		metric := fig.Metric
		if metric == "" {
			metric = "none"
		}
		d.add(at.Line, field+".versus", "versus applies to metric %s only (metric here: %s)", MetricThroughputGainPercent, metric)
	}
}

// matchKeys are the keys a figure's match and versus may name.
var matchKeys = []string{"connections", "concurrency", "in_flight", "payload_bytes", "rate", "requests_per_connection"}

// variantValue is the value of one of matchKeys in a variant; requests_per_connection is 0 for
// forever, as records store it.
func variantValue(v Variant, key string) float64 {
	switch key {
	case "connections":
		return float64(v.Connections)
	case "concurrency":
		return float64(v.Concurrency)
	case "payload_bytes":
		return float64(v.PayloadBytes)
	case "rate":
		return v.Rate
	case "in_flight":
		return float64(v.InFlight)
	case "requests_per_connection":
		return float64(v.RequestsPerConnection)
	}
	return math.NaN()
}

// VersusVariant is the variant a gain figure divides v by: the one of v's step that has the
// figure's versus values and v's own everywhere else, so that a figure matching several
// variants pairs each with its own (over TLS with over TLS, cleartext with cleartext).
func VersusVariant(v Variant, versus map[string]float64) (Variant, bool) {
	if v.Step == nil || len(versus) == 0 {
		return Variant{}, false
	}
	for _, w := range v.Step.Variants() {
		if w.Name == v.Name || !MatchVariant(versus, w) || w.TLS != v.TLS || w.HTTPVersion != v.HTTPVersion ||
			w.Encoding != v.Encoding || w.LoadPercent != v.LoadPercent {
			continue
		}
		same := true
		for _, key := range matchKeys {
			if _, changed := versus[key]; !changed && variantValue(w, key) != variantValue(v, key) {
				same = false
			}
		}
		if same {
			return w, true
		}
	}
	return Variant{}, false
}

// validateVersus checks that every variant a gain figure's match picks has a variant to divide
// by, other than itself.
func validateVersus(d *decoder, fig Figure, st *Step, variants []Variant, field string) {
	if len(fig.Versus) == 0 {
		return // missing or malformed: decodeFigure said so
	}
	for _, v := range variants {
		if !MatchVariant(fig.Match, v) {
			continue
		}
		if _, ok := VersusVariant(v, fig.Versus); !ok {
			d.add(fig.Line, field+".versus", "step %s has no variant with %s beside %s to divide by", st.Name, formatMatch(fig.Versus), v.Name)
			return
		}
	}
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// validateFigures checks the published figures: each names a step, target and metric that exist,
// in a unit of the metric's dimension, and picks variants that the step runs.
func validateFigures(d *decoder, sc *Scenario) {
	names := map[string]int{}
	for i, fig := range sc.Published.Figures {
		field := fmt.Sprintf("published.figures[%d]", i)
		if prev, dup := names[fig.Name]; dup && fig.Name != "" {
			d.add(fig.Line, field+".name", "figure name %q already used at line %d", fig.Name, prev)
		}
		names[fig.Name] = fig.Line
		if fig.Metric == "" {
			if fig.Step != "" || fig.Target != "" || len(fig.Match) > 0 || fig.At != "" {
				d.add(fig.Line, field+".metric", "a figure that names a step needs a metric to compare; one of %s", strings.Join(Metrics, ", "))
			}
			continue
		}
		if u, ok := units[fig.Unit]; ok && u.dim != metricDims[fig.Metric] {
			d.add(fig.Line, field+".unit", "unit %s does not fit metric %s (which is in %s)", fig.Unit, fig.Metric, MetricUnit(fig.Metric))
		}
		st, ok := sc.Step(fig.Step)
		if !ok {
			d.add(fig.Line, field+".step", "unknown step %q; expected one of %s", clip(fig.Step), strings.Join(stepNames(sc), ", "))
			continue
		}
		if st.matrixSize() > maxVariants {
			continue
		}
		variants := st.Variants()
		if !contains(variants[0].Targets, fig.Target) {
			d.add(fig.Line, field+".target", "step %s does not run target %q; it runs %s", st.Name, clip(fig.Target), strings.Join(variants[0].Targets, ", "))
			continue
		}
		if fig.Tool != "" {
			if ok, _ := sc.compatible(fig.Tool, fig.Target); !ok || !contains(variants[0].Tools, fig.Tool) {
				d.add(fig.Line, field+".tool", "step %s does not run tool %q on %s", st.Name, clip(fig.Tool), fig.Target)
				continue
			}
		}
		if fig.At == AtKnee && st.KneeP99Ms == 0 {
			d.add(fig.Line, field+".at", "at: knee needs knee_p99_ms on step %s", st.Name)
		}
		hits := 0
		for _, v := range variants {
			if MatchVariant(fig.Match, v) {
				hits++
			}
		}
		if hits == 0 {
			d.add(fig.Line, field+".match", "no variant of step %s matches %s", st.Name, formatMatch(fig.Match))
		} else if fig.Metric == MetricThroughputGainPercent {
			validateVersus(d, fig, st, variants, field)
		}
	}
}

// MatchVariant reports whether a variant has every value a figure's match asks for.
func MatchVariant(match map[string]float64, v Variant) bool {
	for k, want := range match {
		if variantValue(v, k) != want {
			return false
		}
	}
	return true
}

func formatMatch(m map[string]float64) string {
	parts := make([]string, 0, len(m))
	for _, k := range sortedKeys(m) {
		if k == "requests_per_connection" {
			parts = append(parts, k+"="+churnText(int(m[k])))
			continue
		}
		parts = append(parts, k+"="+formatFloat(m[k]))
	}
	sort.Strings(parts)
	return strings.Join(parts, ", ")
}
