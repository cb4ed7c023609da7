// Package hostclock reads the clock and power state of the host's cores from sysfs: each CPU's
// current frequency and governor (cpufreq) and whether the machine runs on mains or battery
// (power_supply). A laptop's clock turbos, throttles when hot and drops on battery; these are
// what tell that apart from a change of the code. Everything is read under a root so tests can
// point it at a fixture tree.
package hostclock

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"

	"github.com/protobench/protobench/internal/record"
)

// ErrNoCpufreq says the host exposes no cpufreq: a VM, or a kernel without a frequency driver.
var ErrNoCpufreq = errors.New("no cpufreq in sysfs (a VM, or a kernel without a frequency driver)")

// ErrNoPowerSupply says the host lists no power supply: a desktop, a server or a VM.
var ErrNoPowerSupply = errors.New("no power supply in /sys/class/power_supply (a desktop, a server or a VM)")

func cpufreqFile(root string, cpu int, name string) string {
	return filepath.Join(root, fmt.Sprintf("sys/devices/system/cpu/cpu%d/cpufreq", cpu), name)
}

// CurMHz is CPU cpu's current frequency in MHz (scaling_cur_freq, in kHz).
func CurMHz(root string, cpu int) (float64, error) {
	b, err := os.ReadFile(cpufreqFile(root, cpu, "scaling_cur_freq"))
	if errors.Is(err, os.ErrNotExist) {
		return 0, ErrNoCpufreq
	}
	if err != nil {
		return 0, err
	}
	khz, err := strconv.ParseFloat(strings.TrimSpace(string(b)), 64)
	if err != nil || khz <= 0 {
		return 0, fmt.Errorf("cpu%d scaling_cur_freq %q: not a frequency", cpu, strings.TrimSpace(string(b)))
	}
	return khz / 1000, nil
}

// Governor is the cpufreq governor of cpus: one name, or the distinct ones joined by "/" when
// they differ.
func Governor(root string, cpus []int) (string, error) {
	seen := map[string]bool{}
	for _, c := range cpus {
		b, err := os.ReadFile(cpufreqFile(root, c, "scaling_governor"))
		if errors.Is(err, os.ErrNotExist) {
			return "", ErrNoCpufreq
		}
		if err != nil {
			return "", err
		}
		seen[strings.TrimSpace(string(b))] = true
	}
	var names []string
	for n := range seen {
		names = append(names, n)
	}
	sort.Strings(names)
	return strings.Join(names, "/"), nil
}

// Power is "mains" when a mains or USB supply is online, "battery" when a battery is present
// and none is, or ErrNoPowerSupply.
func Power(root string) (string, error) {
	dirs, _ := filepath.Glob(filepath.Join(root, "sys/class/power_supply/*"))
	battery, external := false, false
	for _, d := range dirs {
		typ := readTrim(filepath.Join(d, "type"))
		switch typ {
		case "Mains", "USB":
			external = true
			if readTrim(filepath.Join(d, "online")) == "1" {
				return "mains", nil
			}
		case "Battery":
			if p := readTrim(filepath.Join(d, "present")); p == "" || p == "1" {
				battery = true
			}
		}
	}
	switch {
	case battery:
		return "battery", nil
	case external:
		// A supply that says it is offline, and no battery: nothing else can power the machine.
		return "mains", nil
	}
	return "", ErrNoPowerSupply
}

func readTrim(path string) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(b))
}

// Describe reads, for the doctor and run.json, the power source and the governor of cpus in a
// few words, with what is not available and why.
func Describe(root string, cpus []int) (power, governor string, notes []string) {
	power, err := Power(root)
	if err != nil {
		notes = append(notes, "power source not available: "+err.Error())
	}
	governor, err = Governor(root, cpus)
	if err != nil {
		notes = append(notes, "governor not available: "+err.Error())
	}
	return power, governor, notes
}

// Summarize is the lowest, mean and highest of MHz samples; nil when there are none.
func Summarize(mhz []float64) *record.Frequency {
	if len(mhz) == 0 {
		return nil
	}
	f := record.Frequency{Min: mhz[0], Max: mhz[0]}
	sum := 0.0
	for _, v := range mhz {
		f.Min, f.Max = min(f.Min, v), max(f.Max, v)
		sum += v
	}
	f.Mean = float64(int64(sum/float64(len(mhz))*10+0.5)) / 10
	return &f
}
