package report

import (
	"math"
	"strings"
	"testing"

	"github.com/protobench/protobench/internal/stats"
)

// judge reads a gain's interval as it reads a median's: the summary's interval, its label kept.
func TestJudge(t *testing.T) {
	iv := stats.Interval{Lo: 5, Hi: 30, OK: true, Method: stats.MethodPairedLog, Coverage: 0.95, N: 3}
	for _, c := range []struct {
		name        string
		ours, pub   float64
		iv          stats.Interval
		want, label string
	}{
		{"inside", 12, 18, iv, "consistent: the published value is inside our interval of the gain", "paired t on logs, 95.0 % at n=3 pairs"},
		{"outside, ours higher", 40, 18, stats.Interval{Lo: 35, Hi: 45, OK: true, Method: stats.MethodPairedLog, Coverage: 0.95, N: 3},
			"ours higher: the published value is outside our interval of the gain", "n=3 pairs"},
		{"no interval", 12, 18, stats.Interval{N: 1}, "ours lower (one repeat: no interval to judge by)", ""},
		{"no value", math.NaN(), 18, iv, "no value of ours", ""},
	} {
		got := judge(c.ours, c.pub, c.iv, "gain")
		if !strings.HasPrefix(got, c.want) || !strings.Contains(got, c.label) {
			t.Errorf("%s: %q, want it to start %q and name %q", c.name, got, c.want, c.label)
		}
	}
}
