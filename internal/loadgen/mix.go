package loadgen

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// MethodWeight is one method of a mix and its share.
type MethodWeight struct {
	Method string `json:"method"`
	Weight int    `json:"weight"`
	// Connections is how many of the run's connections call this method.
	Connections int `json:"connections"`
}

// ParseMix reads a --method value. A single method ("GetUser") is not a mix and returns nil. A
// mix is "Method:weight,Method:weight,..." with at least two distinct methods and positive
// integer weights, the form scenario files produce from their mix: block.
func ParseMix(s string) ([]MethodWeight, error) {
	if !strings.ContainsAny(s, ":,") {
		return nil, nil
	}
	var mix []MethodWeight
	for i, part := range strings.Split(s, ",") {
		name, weight, ok := strings.Cut(strings.TrimSpace(part), ":")
		if !ok || name == "" {
			return nil, fmt.Errorf("--method %q: part %d %q: want Method:weight", s, i+1, part)
		}
		w, err := strconv.Atoi(weight)
		if err != nil || w <= 0 {
			return nil, fmt.Errorf("--method %q: part %d %q: weight must be a positive integer", s, i+1, part)
		}
		if slices.ContainsFunc(mix, func(m MethodWeight) bool { return m.Method == name }) {
			return nil, fmt.Errorf("--method %q: %s appears twice", s, name)
		}
		mix = append(mix, MethodWeight{Method: name, Weight: w})
	}
	if len(mix) < 2 {
		return nil, fmt.Errorf("--method %q: a mix needs at least two methods", s)
	}
	return mix, nil
}

// MixString is the canonical form of a mix, as ParseMix reads it.
func MixString(mix []MethodWeight) string {
	parts := make([]string, len(mix))
	for i, m := range mix {
		parts[i] = m.Method + ":" + strconv.Itoa(m.Weight)
	}
	return strings.Join(parts, ",")
}

// apportionMix gives each of n connections a method, in proportion to the weights (largest
// remainder, every method at least one connection), and fills in each method's Connections.
// The methods are interleaved rather than laid out in blocks, so that when the engine splits the
// connections among event loops every loop carries the mix, not one method.
//
// Splitting connections rather than picking a method per request keeps every driver's requests
// precomputed per connection; the request mix then follows the weights as far as the methods
// cost the server alike, which is why the split is recorded in the result.
func apportionMix(mix []MethodWeight, n int) ([]string, error) {
	if len(mix) == 0 {
		return nil, nil // not a mix: every connection calls Config.Method
	}
	if n < len(mix) {
		return nil, fmt.Errorf("--method %s: a mix of %d methods needs at least %d connections, got --connections %d",
			MixString(mix), len(mix), len(mix), n)
	}
	total := 0
	for _, m := range mix {
		total += m.Weight
	}
	// One connection each first, then the rest by largest remainder of the ideal share.
	counts := make([]int, len(mix))
	rem := make([]float64, len(mix))
	left := n
	for i, m := range mix {
		ideal := float64(n) * float64(m.Weight) / float64(total)
		counts[i] = max(1, int(ideal))
		rem[i] = ideal - float64(counts[i])
		left -= counts[i]
	}
	for left > 0 {
		best := 0
		for i := range rem {
			if rem[i] > rem[best] {
				best = i
			}
		}
		counts[best]++
		rem[best]--
		left--
	}
	for left < 0 { // the at-least-one rule overshot: take from the largest
		best := 0
		for i := range counts {
			if counts[i] > counts[best] {
				best = i
			}
		}
		counts[best]--
		left++
	}
	// Interleave: at each position, the method furthest behind its share so far.
	out := make([]string, 0, n)
	given := make([]int, len(mix))
	for pos := 0; pos < n; pos++ {
		best := -1
		var bestLag float64
		for i := range mix {
			if given[i] == counts[i] {
				continue
			}
			lag := float64(counts[i])*float64(pos+1)/float64(n) - float64(given[i])
			if best < 0 || lag > bestLag {
				best, bestLag = i, lag
			}
		}
		given[best]++
		out = append(out, mix[best].Method)
	}
	for i := range mix {
		mix[i].Connections = counts[i]
	}
	return out, nil
}

// withMethod is a copy of c that calls one method.
func (c *Config) withMethod(method string) *Config {
	cp := *c
	cp.Method = method
	cp.Mix = nil
	return &cp
}

// checkDriver is the driver's Check, once per method of a mix, after checking the mix fits the
// connections. The driver may fill in defaults (pattern, options), which the mix keeps.
func checkDriver(d Driver, cfg *Config) error {
	if err := checkChurn(d, cfg); err != nil {
		return err
	}
	if len(cfg.Mix) == 0 {
		return d.Check(cfg)
	}
	if _, err := apportionMix(cfg.Mix, cfg.Connections); err != nil {
		return err
	}
	for _, m := range cfg.Mix {
		c := cfg.withMethod(m.Method)
		if err := d.Check(c); err != nil {
			return err
		}
		cfg.Pattern = c.Pattern
	}
	cfg.Method = MixString(cfg.Mix)
	return nil
}
