package hostspeed

import (
	"math"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

func TestParseCPUSet(t *testing.T) {
	got, err := ParseCPUSet("0,2-3")
	if err != nil || len(got) != 3 || got[0] != 0 || got[1] != 2 || got[2] != 3 {
		t.Errorf("ParseCPUSet = %v, %v", got, err)
	}
	for _, bad := range []string{"", "a", "3-1"} {
		if _, err := ParseCPUSet(bad); err == nil {
			t.Errorf("%q: no error", bad)
		}
	}
}

// TestMeasureOnThisHost runs the real loop on the first core this process may use and on all
// of them: a positive index, and a refusal to pin to a core the machine does not have.
func TestMeasureOnThisHost(t *testing.T) {
	var allowed unix.CPUSet
	if err := unix.SchedGetaffinity(0, &allowed); err != nil {
		t.Fatal(err)
	}
	var cores []string
	for c := 0; c < 1024 && len(cores) < allowed.Count(); c++ {
		if allowed.IsSet(c) {
			cores = append(cores, strconv.Itoa(c))
		}
	}
	v, err := Measure(cores[0])
	if err != nil || !(v > 0) {
		t.Fatalf("Measure(%s) = %v, %v", cores[0], v, err)
	}
	t.Logf("core %s: %.1f million iterations/s", cores[0], v)
	if _, err := Measure("100000"); err == nil {
		t.Error("pinning to core 100000 did not fail")
	}
	s, err := Take(cores[0], strings.Join(cores, ","))
	if err != nil || s.Server <= 0 || s.Client <= 0 || time.Since(s.At) > time.Hour {
		t.Errorf("Take = %+v, %v", s, err)
	}
}

func TestDrift(t *testing.T) {
	a := &Record{Start: &Sample{Server: 100, Client: 100}, End: &Sample{Server: 98, Client: 101}}
	b := &Record{Start: &Sample{Server: 80, Client: 100}, End: &Sample{Server: 82, Client: 100}}
	d, ok := Drift(a, b)
	if !ok || math.Abs(d-0.25) > 1e-12 {
		t.Errorf("Drift = %v, %v; want 0.25 (100/80)", d, ok)
	}
	if _, ok := Drift(&Record{}, nil); ok {
		t.Error("no samples gave a drift")
	}
}

// TestNoiseRecorded: a sample carries the index's own noise, the spread of a core's tries, and
// Noise takes the largest over the records' samples.
func TestNoiseRecorded(t *testing.T) {
	s, err := Take("0", "0")
	if err != nil {
		t.Skipf("cannot pin to core 0 here: %v", err)
	}
	if !(s.Noise >= 0) || math.IsInf(s.Noise, 0) {
		t.Fatalf("noise %v", s.Noise)
	}
	t.Logf("index %.1f, own noise %.2f %%", s.Server, 100*s.Noise)
	r := &Record{Start: &Sample{Server: 1, Client: 1, Noise: 0.02}, End: &Sample{Server: 1, Client: 1, Noise: 0.05}}
	if got := Noise(r); got != 0.05 {
		t.Errorf("Noise = %v, want 0.05", got)
	}
}
