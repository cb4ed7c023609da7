package scenario

import "go.yaml.in/yaml/v3"

// uniqueAxis is the handler of a matrix key whose value is a list of distinct values, one variant
// each: it records the key's line in pos, decodes every item with one, refuses a value listed
// twice (written back by text, as a scenario writes it) and appends the others to dst in file
// order. A new matrix axis is its decoder of one value, its text, and this.
func uniqueAxis[T comparable](d *decoder, pos map[string]int, key string, dst *[]T, one func(*yaml.Node, string) (T, bool), text func(T) string) keyHandler {
	return func(v *yaml.Node, f string) {
		pos["matrix."+key] = lineOf(v)
		seen := map[T]bool{}
		d.list(v, f, func(item *yaml.Node, f string) {
			x, ok := one(item, f)
			if ok && seen[x] {
				d.add(lineOf(item), f, "value %s listed twice", text(x))
				return
			}
			if ok {
				seen[x] = true
				*dst = append(*dst, x)
			}
		})
	}
}
