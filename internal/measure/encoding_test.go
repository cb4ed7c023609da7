package measure

import "testing"

func TestEncodingText(t *testing.T) {
	for _, tc := range []struct {
		counts map[string]float64
		want   string
	}{
		{nil, ""},
		{map[string]float64{"identity": 1200}, "identity"},
		{map[string]float64{"gzip": 30, "identity": 970}, "identity 97%, gzip 3%"},
		{map[string]float64{"gzip": 1, "identity": 1}, "gzip 50%, identity 50%"},
	} {
		if got := EncodingText(tc.counts); got != tc.want {
			t.Errorf("EncodingText(%v) = %q, want %q", tc.counts, got, tc.want)
		}
	}
}

// A reply encoded otherwise than the step's compression flags the run; nothing counted does not.
func TestEncodingMismatch(t *testing.T) {
	for _, tc := range []struct {
		compression string
		replies     map[string]float64
		want        bool
	}{
		{"none", map[string]float64{"identity": 10}, false},
		{"none", map[string]float64{"identity": 10, "gzip": 1}, true},
		{"", map[string]float64{"gzip": 10}, true},
		{"gzip", map[string]float64{"gzip": 10}, false},
		{"gzip", map[string]float64{"gzip": 10, "identity": 2}, true},
		{"gzip", nil, false},
	} {
		if got := EncodingMismatch(tc.compression, tc.replies); got != tc.want {
			t.Errorf("EncodingMismatch(%q, %v) = %v, want %v", tc.compression, tc.replies, got, tc.want)
		}
	}
}
