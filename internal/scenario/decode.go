package scenario

import (
	"fmt"
	"math"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"
)

// decoder walks yaml.v3 nodes by hand instead of unmarshalling into structs, because only the
// nodes know their line numbers, and every error must name its line and field.
type decoder struct {
	collector
	sc *Scenario // the scenario being decoded, for the targets it declares
}

// resolve follows an alias to the node it names. One step is enough: YAML cannot put an
// anchor on an alias, and the schema's fixed depth bounds recursion even for cyclic anchors.
func resolve(n *yaml.Node) *yaml.Node {
	if n != nil && n.Kind == yaml.AliasNode && n.Alias != nil {
		return n.Alias
	}
	return n
}

// describe names what a node holds, for "expected X, got Y" messages.
func describe(n *yaml.Node) string {
	n = resolve(n)
	switch n.Kind {
	case yaml.MappingNode:
		return "a mapping"
	case yaml.SequenceNode:
		return "a list"
	case yaml.ScalarNode:
		switch n.ShortTag() {
		case "!!null":
			return "nothing"
		case "!!int":
			return "integer " + n.Value
		case "!!float":
			return "number " + n.Value
		case "!!bool":
			return "boolean " + n.Value
		}
		return fmt.Sprintf("string %q", clip(n.Value))
	}
	return "an unsupported YAML node"
}

// clip shortens a value quoted in an error so that one bad line cannot flood the terminal.
func clip(s string) string {
	const max = 40
	if len(s) > max {
		return s[:max] + "..."
	}
	return s
}

// keyHandler decodes the value of one mapping key; field is the value's dotted path.
type keyHandler func(val *yaml.Node, field string)

// mapping calls the handler of every key in n and reports unknown and duplicate keys. It returns
// the set of keys present so callers can check required ones, or nil when n is not a mapping.
func (d *decoder) mapping(n *yaml.Node, field string, handlers map[string]keyHandler) map[string]*yaml.Node {
	n = resolve(n)
	if n.Kind != yaml.MappingNode {
		if field == "" {
			d.add(n.Line, "scenario", "expected a mapping with name, description and steps, got %s", describe(n))
		} else {
			d.add(n.Line, field, "expected a mapping, got %s", describe(n))
		}
		return nil
	}
	seen := map[string]*yaml.Node{}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := resolve(n.Content[i]), n.Content[i+1]
		name := k.Value
		sub := join(field, fieldKey(name))
		if k.Kind != yaml.ScalarNode {
			d.add(k.Line, field, "expected a key name, got %s", describe(k))
			continue
		}
		if prev, dup := seen[name]; dup {
			d.add(k.Line, sub, "key given twice (first at line %d)", prev.Line)
			continue
		}
		seen[name] = k
		h, ok := handlers[name]
		if !ok {
			d.add(k.Line, sub, "unknown key %q; expected one of %s", clip(name), keyList(handlers))
			continue
		}
		h(v, sub)
	}
	return seen
}

// refuse reports every key of the mapping n that refused has a message for, at the key's line, and
// returns n without those keys, so that mapping neither reports them again as unknown nor lists
// them among the keys it expects. It is for keys that were valid once, or belong elsewhere.
func (d *decoder) refuse(n *yaml.Node, field string, refused func(key string) (string, bool)) *yaml.Node {
	r := resolve(n)
	if r.Kind != yaml.MappingNode {
		return n
	}
	kept := make([]*yaml.Node, 0, len(r.Content))
	for i := 0; i+1 < len(r.Content); i += 2 {
		k := resolve(r.Content[i])
		if k.Kind == yaml.ScalarNode {
			if msg, ok := refused(k.Value); ok {
				d.add(k.Line, join(field, fieldKey(k.Value)), "%s", msg)
				continue
			}
		}
		kept = append(kept, r.Content[i], r.Content[i+1])
	}
	if len(kept) == len(r.Content) {
		return n
	}
	c := *r
	c.Content = kept
	return &c
}

// require reports keys missing from a mapping decoded by mapping.
func (d *decoder) require(n *yaml.Node, field string, seen map[string]*yaml.Node, keys ...string) {
	if seen == nil {
		return
	}
	for _, k := range keys {
		if _, ok := seen[k]; !ok {
			d.add(resolve(n).Line, field, "missing key %q", k)
		}
	}
}

func keyList(handlers map[string]keyHandler) string {
	keys := make([]string, 0, len(handlers))
	for k := range handlers {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return strings.Join(keys, ", ")
}

var plainKey = regexp.MustCompile(`^[A-Za-z0-9_.-]{1,48}$`)

// fieldKey writes a key for a field path; odd keys are quoted so the path stays one token.
func fieldKey(name string) string {
	if plainKey.MatchString(name) {
		return name
	}
	return strconv.Quote(clip(name))
}

func join(field, key string) string {
	if field == "" {
		return key
	}
	return field + "." + key
}

// scalar returns n when it is a non-null scalar, reporting what was expected otherwise.
func (d *decoder) scalar(n *yaml.Node, field, expected string) (*yaml.Node, bool) {
	n = resolve(n)
	if n.Kind != yaml.ScalarNode || n.ShortTag() == "!!null" {
		d.add(n.Line, field, "expected %s, got %s", expected, describe(n))
		return nil, false
	}
	return n, true
}

// str decodes a string. Numbers are refused so that a name such as 2024 is quoted on purpose.
func (d *decoder) str(n *yaml.Node, field string) (string, bool) {
	s, ok := d.scalar(n, field, "a string")
	if !ok {
		return "", false
	}
	if s.ShortTag() != "!!str" {
		d.add(s.Line, field, "expected a string, got %s (quote it)", describe(s))
		return "", false
	}
	return s.Value, true
}

// text decodes any scalar as its text, for values such as cpusets where 0 and "0" mean the same.
func (d *decoder) text(n *yaml.Node, field string) (string, bool) {
	s, ok := d.scalar(n, field, "a value")
	if !ok {
		return "", false
	}
	return s.Value, true
}

// integer decodes an integer within [min, max].
func (d *decoder) integer(n *yaml.Node, field string, min, max int64) (int64, bool) {
	s, ok := d.scalar(n, field, "an integer")
	if !ok {
		return 0, false
	}
	var v int64
	if s.ShortTag() != "!!int" || s.Decode(&v) != nil {
		d.add(s.Line, field, "expected an integer, got %s", describe(s))
		return 0, false
	}
	if v < min || v > max {
		d.add(s.Line, field, "expected an integer from %d to %d, got %d", min, max, v)
		return 0, false
	}
	return v, true
}

// number decodes a finite number within [min, max]; minOpen excludes min itself.
func (d *decoder) number(n *yaml.Node, field string, min, max float64, minOpen bool) (float64, bool) {
	s, ok := d.scalar(n, field, "a number")
	if !ok {
		return 0, false
	}
	var v float64
	tag := s.ShortTag()
	if (tag != "!!int" && tag != "!!float") || s.Decode(&v) != nil || math.IsNaN(v) || math.IsInf(v, 0) {
		d.add(s.Line, field, "expected a number, got %s", describe(s))
		return 0, false
	}
	if v < min || v > max || (minOpen && v == min) {
		bound := ">="
		if minOpen {
			bound = ">"
		}
		d.add(s.Line, field, "expected a number %s %s and <= %s, got %s", bound, formatFloat(min), formatFloat(max), formatFloat(v))
		return 0, false
	}
	return v, true
}

// boolean decodes true or false.
func (d *decoder) boolean(n *yaml.Node, field string) (bool, bool) {
	s, ok := d.scalar(n, field, "true or false")
	if !ok {
		return false, false
	}
	var v bool
	if s.ShortTag() != "!!bool" || s.Decode(&v) != nil {
		d.add(s.Line, field, "expected true or false, got %s", describe(s))
		return false, false
	}
	return v, true
}

// maxDuration bounds every duration; a step longer than a day is a typo, not a benchmark.
const maxDuration = 24 * time.Hour

// duration decodes a Go duration string such as 30s or 1m30s. Bare numbers are refused because
// a unitless 30 could mean seconds or milliseconds.
func (d *decoder) duration(n *yaml.Node, field string, allowZero bool) (time.Duration, bool) {
	s, ok := d.scalar(n, field, "a duration such as 30s")
	if !ok {
		return 0, false
	}
	v, err := time.ParseDuration(s.Value)
	if err != nil || s.ShortTag() != "!!str" {
		d.add(s.Line, field, "expected a duration with a unit such as 30s or 1m30s, got %s", describe(s))
		return 0, false
	}
	if v < 0 || (v == 0 && !allowZero) {
		want := "a positive duration"
		if allowZero {
			want = "a duration >= 0"
		}
		d.add(s.Line, field, "expected %s, got %s", want, s.Value)
		return 0, false
	}
	if v > maxDuration {
		d.add(s.Line, field, "expected at most %s, got %s", maxDuration, s.Value)
		return 0, false
	}
	return v, true
}

// size decodes a byte count written as an integer or a string such as 1KiB.
func (d *decoder) size(n *yaml.Node, field string, min int64) (int64, bool) {
	s, ok := d.scalar(n, field, "a size such as 1024 or 1KiB")
	if !ok {
		return 0, false
	}
	v, err := ParseSize(s.Value)
	if err != nil || (s.ShortTag() != "!!int" && s.ShortTag() != "!!str") {
		d.add(s.Line, field, "expected a size such as 1024, 1KiB or 10MB, got %s", describe(s))
		return 0, false
	}
	if v < min {
		d.add(s.Line, field, "expected a size >= %d bytes, got %s", min, s.Value)
		return 0, false
	}
	return v, true
}

// list calls each for every item of a non-empty sequence.
func (d *decoder) list(n *yaml.Node, field string, each func(item *yaml.Node, field string)) bool {
	n = resolve(n)
	if n.Kind != yaml.SequenceNode {
		d.add(n.Line, field, "expected a list, got %s", describe(n))
		return false
	}
	if len(n.Content) == 0 {
		d.add(n.Line, field, "empty list; give at least one value")
		return false
	}
	for i, item := range n.Content {
		each(item, fmt.Sprintf("%s[%d]", field, i))
	}
	return true
}

// nameList decodes a non-empty list of distinct names, each checked against allowed.
func (d *decoder) nameList(n *yaml.Node, field, what string, allowed []string) []string {
	var out []string
	seen := map[string]bool{}
	d.list(n, field, func(item *yaml.Node, f string) {
		s, ok := d.str(item, f)
		if !ok {
			return
		}
		switch {
		case !contains(allowed, s):
			d.add(resolve(item).Line, f, "unknown %s %q; expected one of %s", what, clip(s), strings.Join(allowed, ", "))
		case seen[s]:
			d.add(resolve(item).Line, f, "%s %q listed twice", what, s)
		default:
			seen[s] = true
			out = append(out, s)
		}
	})
	return out
}

// lineOf is the line of a node, following aliases.
func lineOf(n *yaml.Node) int {
	return resolve(n).Line
}
