package measure

import (
	"testing"
	"time"

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
	for _, scale := range []float64{1, 0.79} {
		want := record.CoreTime{UserPercent: 40, SystemPercent: 25, SoftirqPercent: 35, BusyPercent: 100, BusySeconds: scale}
		m := map[string]float64{}
		for k, v := range full {
			m[k] = v * scale
		}
		got, ok := coreTime(m)
		if !ok || *got != want {
			t.Errorf("scale %v: %+v (%v), want %+v", scale, got, ok, want)
		}
	}
	// Steal and nice are not the server's work: they are Other, never busy; irq is.
	got, ok := coreTime(map[string]float64{"user": 1, "idle": 2, "steal": 0.5, "nice": 0.5})
	if want := (record.CoreTime{UserPercent: 25, IdlePercent: 50, OtherPercent: 25, BusyPercent: 25, BusySeconds: 1}); !ok || *got != want {
		t.Errorf("other modes: %+v, want %+v", got, want)
	}
	got, ok = coreTime(map[string]float64{"user": 1, "irq": 1, "idle": 1, "steal": 1})
	if want := (record.CoreTime{UserPercent: 25, IrqPercent: 25, IdlePercent: 25, OtherPercent: 25, BusyPercent: 50, BusySeconds: 2}); !ok || *got != want {
		t.Errorf("irq: %+v, want %+v", got, want)
	}
	if _, ok := coreTime(map[string]float64{}); ok {
		t.Error("no series: want ok=false")
	}
}

// TestChargeStack: the observability stack's CPU on the server's core leaves the busy share, so
// a core the stack filled does not exempt the server from unsaturated.
func TestChargeStack(t *testing.T) {
	// 10 s on one core: 9.5 s busy, of which the stack's containers took 2 s.
	ct := record.CoreTime{UserPercent: 60, SystemPercent: 15, SoftirqPercent: 20, IdlePercent: 5, BusyPercent: 95, BusySeconds: 9.5}
	chargeStack(&ct, 2, 10*time.Second, "0")
	if ct.BusyPercent != 75 || ct.ObservabilitySeconds != 2 {
		t.Errorf("after charging 2 s of 10 to the stack: busy %.1f %%, stack %.1f s; want 75 %% and 2 s", ct.BusyPercent, ct.ObservabilitySeconds)
	}
	if ct.Busy() >= 90 {
		t.Errorf("Busy() = %.1f, want below the saturation mark", ct.Busy())
	}
	if !cpusetsOverlap("0", "0-1") || cpusetsOverlap("1", "0") {
		t.Error("cpusetsOverlap")
	}
}

func TestOthersPercent(t *testing.T) {
	for _, tc := range []struct {
		name        string
		busy, ours  float64
		cores       int
		window      time.Duration
		wantPercent float64
	}{
		{"a spinner beside a half-busy tool", 9.5, 4.5, 1, 10 * time.Second, 50},
		{"quiet", 5.2, 5, 1, 10 * time.Second, 2},
		{"two cores", 10, 2, 2, 10 * time.Second, 40},
		{"ours read above busy", 4, 4.3, 1, 10 * time.Second, 0},
		{"no window", 1, 0, 1, 0, 0},
	} {
		if got := othersPercent(tc.busy, tc.ours, tc.cores, tc.window); got != tc.wantPercent {
			t.Errorf("%s: othersPercent = %v, want %v", tc.name, got, tc.wantPercent)
		}
	}
}
