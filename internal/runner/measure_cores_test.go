package runner

import (
	"testing"

	"github.com/protobench/protobench/internal/record"
)

// TestCoreTimeSelector: one core or several, every mode, from node-exporter's job only (a
// user's extra job might export node_cpu too).
func TestCoreTimeSelector(t *testing.T) {
	for _, c := range []struct {
		cpus []int
		want string
	}{
		{[]int{0}, `node_cpu_seconds_total{job="node-exporter",cpu=~"0"}`},
		{[]int{1, 2, 3}, `node_cpu_seconds_total{job="node-exporter",cpu=~"1|2|3"}`},
	} {
		if got := coreTimeSelector(c.cpus); got != c.want {
			t.Errorf("coreTimeSelector(%v) = %s\nwant %s", c.cpus, got, c.want)
		}
	}
}

// TestCoreTimeShares: the modes' seconds become shares of their sum, whatever the window's
// length; the modes not named go to Other.
func TestCoreTimeShares(t *testing.T) {
	// A saturated REST server's core as this machine's node-exporter read it: 0.35 softirq.
	full := map[string]float64{"user": 0.40, "system": 0.25, "softirq": 0.35, "idle": 0, "iowait": 0, "steal": 0}
	want := record.CoreTime{UserPercent: 40, SystemPercent: 25, SoftirqPercent: 35}
	for _, scale := range []float64{1, 0.79} {
		m := map[string]float64{}
		for k, v := range full {
			m[k] = v * scale
		}
		got, ok := coreTime(m)
		if !ok || *got != want {
			t.Errorf("scale %v: %+v (%v), want %+v", scale, got, ok, want)
		}
	}
	got, ok := coreTime(map[string]float64{"user": 1, "idle": 2, "steal": 0.5, "nice": 0.5})
	if want := (record.CoreTime{UserPercent: 25, IdlePercent: 50, OtherPercent: 25}); !ok || *got != want {
		t.Errorf("other modes: %+v, want %+v", got, want)
	}
	if _, ok := coreTime(map[string]float64{}); ok {
		t.Error("no series: want ok=false")
	}
}
