package measure

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/protobench/protobench/internal/cputopo"
	"github.com/protobench/protobench/internal/hostclock"
	"github.com/protobench/protobench/internal/prom"
	"github.com/protobench/protobench/internal/record"
	"github.com/protobench/protobench/internal/scenario"
)

func TestFrequencyOfNodeExporterSamples(t *testing.T) {
	series := []prom.Series{
		{Labels: map[string]string{"cpu": "0"}, Points: []prom.Point{{V: 3.0e9}, {V: 2.4e9}}},
		{Labels: map[string]string{"cpu": "4"}, Points: []prom.Point{{V: 3.2e9}}},
	}
	f, err := frequencyOf(series)
	if err != nil || f.Min != 2400 || f.Max != 3200 || f.Mean != 2866.7 {
		t.Errorf("frequency = %+v, %v", f, err)
	}
	if _, err := frequencyOf(nil); err == nil {
		t.Error("no samples gave a frequency")
	}
}

func writeFile(t *testing.T, root, path, content string) {
	t.Helper()
	p := filepath.Join(root, path)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(content+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
}

func TestClockFromSysfsWhereNodeExporterHasNone(t *testing.T) {
	root := t.TempDir()
	for _, cpu := range []string{"0", "1"} {
		writeFile(t, root, "sys/devices/system/cpu/cpu"+cpu+"/cpufreq/scaling_cur_freq", "2100000")
		writeFile(t, root, "sys/devices/system/cpu/cpu"+cpu+"/cpufreq/scaling_governor", "powersave")
	}
	writeFile(t, root, "sys/class/power_supply/AC/type", "Mains")
	writeFile(t, root, "sys/class/power_supply/AC/online", "0")
	writeFile(t, root, "sys/class/power_supply/BAT0/type", "Battery")
	sampler, err := hostclock.StartSampler(root, []int{0, 1}, 10*time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	defer sampler.Stop()
	start := time.Now().Add(-time.Second)
	run := scenario.Run{ID: "r1", Layout: scenario.AutoLayout(cputopo.Flat(2, ""))}
	m := &Measurer{Meter: None{}, HostCores: true, Clock: sampler, SysRoot: root, Log: t.Logf}
	var rec record.Record
	m.addClock(context.Background(), &rec, run, start, time.Now())
	c := rec.Clock
	if c == nil || c.Server == nil || c.Server.Mean != 2100 || c.Client == nil || c.Governor != "powersave" || c.Power != "battery" || !strings.Contains(c.Source, "sysfs") {
		t.Fatalf("clock = %+v", c)
	}

	// A VM: no cpufreq, no power supply. The record says so; no figure is zero.
	vm := &Measurer{Meter: None{}, HostCores: true, SysRoot: t.TempDir(), Log: t.Logf}
	rec = record.Record{}
	vm.addClock(context.Background(), &rec, run, start, time.Now())
	c = rec.Clock
	if c == nil || c.Server != nil || c.Client != nil || c.Governor != "" || c.Power != "" {
		t.Fatalf("VM clock = %+v", c)
	}
	for _, want := range []string{"server's clock not available", "client's clock not available", "governor not available", "power source not available"} {
		if !strings.Contains(c.Note, want) {
			t.Errorf("note %q lacks %q", c.Note, want)
		}
	}
}
