package hostclock

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

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

// laptopClock writes a cpufreq tree: CPUs 0-3 at khz, with governor.
func laptopClock(t *testing.T, khz int, governor string) string {
	root := t.TempDir()
	for c := 0; c < 4; c++ {
		write(t, root, fmt.Sprintf("sys/devices/system/cpu/cpu%d/cpufreq/scaling_cur_freq", c), fmt.Sprint(khz+c*1000))
		write(t, root, fmt.Sprintf("sys/devices/system/cpu/cpu%d/cpufreq/scaling_governor", c), governor)
	}
	return root
}

func TestFrequencyAndGovernorFromSysfs(t *testing.T) {
	root := laptopClock(t, 2400000, "powersave")
	mhz, err := CurMHz(root, 2)
	if err != nil || mhz != 2402 {
		t.Errorf("CurMHz = %v, %v; want 2402", mhz, err)
	}
	g, err := Governor(root, []int{0, 1})
	if err != nil || g != "powersave" {
		t.Errorf("Governor = %q, %v", g, err)
	}
	write(t, root, "sys/devices/system/cpu/cpu1/cpufreq/scaling_governor", "performance")
	if g, _ := Governor(root, []int{0, 1}); g != "performance/powersave" {
		t.Errorf("mixed governors = %q", g)
	}
	vm := t.TempDir()
	if _, err := CurMHz(vm, 0); !errors.Is(err, ErrNoCpufreq) {
		t.Errorf("no cpufreq: %v", err)
	}
	if _, err := Governor(vm, []int{0}); !errors.Is(err, ErrNoCpufreq) {
		t.Errorf("no cpufreq governor: %v", err)
	}
}

func TestPowerSource(t *testing.T) {
	cases := []struct {
		name  string
		files map[string]string
		want  string
	}{
		{"laptop on mains", map[string]string{"AC/type": "Mains", "AC/online": "1", "BAT0/type": "Battery", "BAT0/present": "1"}, "mains"},
		{"laptop on battery", map[string]string{"AC/type": "Mains", "AC/online": "0", "BAT0/type": "Battery", "BAT0/present": "1"}, "battery"},
		{"USB-C charger", map[string]string{"ucsi-source-psy-USBC000:001/type": "USB", "ucsi-source-psy-USBC000:001/online": "1", "BAT1/type": "Battery"}, "mains"},
		{"desktop with a UPS reporting mains", map[string]string{"AC/type": "Mains", "AC/online": "0"}, "mains"},
	}
	for _, c := range cases {
		root := t.TempDir()
		for p, v := range c.files {
			write(t, root, "sys/class/power_supply/"+p, v)
		}
		if got, err := Power(root); err != nil || got != c.want {
			t.Errorf("%s: Power = %q, %v; want %q", c.name, got, err, c.want)
		}
	}
	if _, err := Power(t.TempDir()); !errors.Is(err, ErrNoPowerSupply) {
		t.Errorf("no supply: %v", err)
	}
	power, gov, notes := Describe(t.TempDir(), []int{0})
	if power != "" || gov != "" || len(notes) != 2 {
		t.Errorf("Describe on a VM = %q %q %v: want both not available, with why", power, gov, notes)
	}
}

func TestSamplerWindow(t *testing.T) {
	root := laptopClock(t, 3000000, "performance")
	s, err := StartSampler(root, []int{0}, 5*time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Stop()
	begin := time.Now().Add(-time.Second)
	// The clock drops; the sampler sees both values in the window.
	write(t, root, "sys/devices/system/cpu/cpu0/cpufreq/scaling_cur_freq", "1500000")
	deadline := time.Now().Add(10 * time.Second)
	for {
		f := s.Window([]int{0}, begin, time.Now())
		if f != nil && f.Min == 1500 && f.Max == 3000 && f.Mean > 1500 && f.Mean < 3000 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("window = %+v: want min 1500 and max 3000", f)
		}
		time.Sleep(10 * time.Millisecond)
	}
	if f := s.Window([]int{3}, begin, time.Now()); f != nil {
		t.Errorf("a CPU not sampled has a clock: %+v", f)
	}
	if _, err := StartSampler(t.TempDir(), []int{0}, time.Second); !errors.Is(err, ErrNoCpufreq) {
		t.Errorf("sampler without cpufreq: %v", err)
	}
}

func TestThisMachine(t *testing.T) {
	mhz, err := CurMHz("/", 0)
	switch {
	case errors.Is(err, ErrNoCpufreq):
		t.Logf("this machine: %v", err)
	case err != nil || mhz <= 0:
		t.Errorf("CurMHz = %v, %v", mhz, err)
	default:
		t.Logf("cpu0 at %.0f MHz", mhz)
	}
	power, gov, notes := Describe("/", []int{0})
	t.Logf("power %q governor %q %v", power, gov, notes)
	noted := strings.Join(notes, "; ")
	if power == "" && !strings.Contains(noted, "power source not available: ") {
		t.Errorf("no power source and no note saying why: %v", notes)
	}
	if gov == "" && !strings.Contains(noted, "governor not available: ") {
		t.Errorf("no governor and no note saying why: %v", notes)
	}
}
