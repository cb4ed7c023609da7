package doctor

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/protobench/protobench/internal/cputopo"
	"github.com/protobench/protobench/internal/scenario"
)

// TestDoctorOnThisMachine runs every check for real: this machine's sysfs, /proc/stat, Docker
// and the registry probe. Each line must be there and say something.
func TestDoctorOnThisMachine(t *testing.T) {
	if _, err := dockerInfo(context.Background(), "docker"); err != nil {
		t.Skipf("no Docker here: %v", err)
	}
	wd, _ := os.Getwd()
	lines := Check(context.Background(), Options{Layout: scenario.AutoLayout(cputopo.Host()), RepoRoot: wd,
		LoadSample: 300 * time.Millisecond, Registry: true, RegistryTimeout: 20 * time.Second})
	var out bytes.Buffer
	Print(&out, lines)
	t.Logf("\n%s", out.String())
	want := []string{"layout", "power", "load", "disk", "docker", "registry"}
	if len(lines) != len(want) {
		t.Fatalf("%d lines, want %v", len(lines), want)
	}
	for i, l := range lines {
		if l.Topic != want[i] || strings.TrimSpace(l.Text) == "" {
			t.Errorf("line %d = %+v, want topic %s with a text", i, l, want[i])
		}
		if l.Warn && l.Fix == "" {
			t.Errorf("%s warns without a fix: %+v", l.Topic, l)
		}
	}
	if !strings.Contains(lines[0].Text, "server CPUs ") || !strings.Contains(lines[2].Text, "busy with other processes") {
		t.Errorf("layout or load line: %q, %q", lines[0].Text, lines[2].Text)
	}
}

func TestCommandRuns(t *testing.T) {
	var out, errs bytes.Buffer
	if code := Command(context.Background(), []string{"--load", "100ms", "--registry=false"}, &out, &errs); code != 0 {
		t.Fatalf("exit %d: %s", code, errs.String())
	}
	for _, topic := range []string{"layout:", "power:", "load:", "disk:", "docker:"} {
		if !strings.Contains(out.String(), topic) {
			t.Errorf("no %s line in\n%s", topic, out.String())
		}
	}
	if code := Command(context.Background(), []string{"--load", "-1s"}, &out, &errs); code != 2 || !strings.Contains(errs.String(), "--load -1s") {
		t.Errorf("bad --load: exit %d, %s", code, errs.String())
	}
}

func write(t *testing.T, root, path, content string) {
	t.Helper()
	p := filepath.Join(root, path)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(content+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
}

func TestPowerWarnsWithTheFix(t *testing.T) {
	root := t.TempDir()
	for _, c := range []string{"0", "1"} {
		write(t, root, "sys/devices/system/cpu/cpu"+c+"/cpufreq/scaling_governor", "powersave")
	}
	write(t, root, "sys/class/power_supply/AC/type", "Mains")
	write(t, root, "sys/class/power_supply/AC/online", "0")
	write(t, root, "sys/class/power_supply/BAT0/type", "Battery")
	l := powerLine(Options{Root: root, Layout: scenario.Layout{ServerCPUSet: "0", ClientCPUSet: "1"}})
	if !l.Warn || !strings.Contains(l.Text, "on battery") || !strings.Contains(l.Fix, "plug in") || !strings.Contains(l.Fix, "governor to performance") {
		t.Errorf("battery and powersave: %+v", l)
	}
	write(t, root, "sys/class/power_supply/AC/online", "1")
	for _, c := range []string{"0", "1"} {
		write(t, root, "sys/devices/system/cpu/cpu"+c+"/cpufreq/scaling_governor", "performance")
	}
	if l := powerLine(Options{Root: root, Layout: scenario.Layout{ServerCPUSet: "0", ClientCPUSet: "1"}}); l.Warn || l.Text != "on mains; governor performance" {
		t.Errorf("mains and performance: %+v", l)
	}
}

func TestLayoutWarnsOnSharedCores(t *testing.T) {
	one := &cputopo.Topology{CPUs: []cputopo.CPU{{ID: 0}, {ID: 1}}, Threads: map[int]int{0: 2}}
	l := layoutLine(scenario.AutoLayout(one))
	if !l.Warn || !strings.Contains(l.Text, "smt-shared") || !strings.Contains(l.Text, "one physical core") || l.Fix == "" {
		t.Errorf("one core, two threads: %+v", l)
	}
}

func TestOtherLoadFromProcStat(t *testing.T) {
	root := t.TempDir()
	// cpu0: 100 user, 0 nice, 50 system, 850 idle; cpu1 all idle.
	write(t, root, "proc/stat", "cpu  100 0 50 1850 0 0 0 0 0 0\ncpu0 100 0 50 850 0 0 0 0 0 0\ncpu1 0 0 0 1000 0 0 0 0 0 0\nintr 1")
	got, err := procStat(filepath.Join(root, "proc/stat"), []int{0, 1})
	if err != nil || got != [2]float64{150, 2000} {
		t.Errorf("procStat = %v, %v", got, err)
	}
	if _, err := procStat(filepath.Join(root, "proc/stat"), []int{0, 5}); err == nil {
		t.Error("a CPU missing from /proc/stat went unnoticed")
	}
}
