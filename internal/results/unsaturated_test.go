package results

import (
	"testing"

	"github.com/protobench/protobench/internal/record"
)

// TestUnsaturatedCountsOnlyTheServersWork: a server core is full when its user, system, softirq
// and irq time (less the observability stack's) reach the mark; steal, iowait and nice do not
// fill it for the server.
func TestUnsaturatedCountsOnlyTheServersWork(t *testing.T) {
	base := record.Record{Model: "closed", ServerCPUPercentOfCap: 70, ClientCPUPercentOfCap: 60, Flags: []string{}}
	cases := []struct {
		name  string
		cores *record.CoreTime
		want  bool
	}{
		{"no core figures", nil, true},
		{"core full of server work", &record.CoreTime{UserPercent: 50, SystemPercent: 15, SoftirqPercent: 25, IrqPercent: 2, IdlePercent: 8}, false},
		{"core full with steal", &record.CoreTime{UserPercent: 50, SystemPercent: 15, SoftirqPercent: 10, IdlePercent: 5, OtherPercent: 20}, true},
		{"core full with the stack's CPU", &record.CoreTime{UserPercent: 60, SystemPercent: 15, SoftirqPercent: 20, IdlePercent: 5, BusyPercent: 75}, true},
	}
	for _, c := range cases {
		r := base
		r.ServerCores = c.cores
		if got := unsaturated(r); got != c.want {
			t.Errorf("%s: unsaturated = %v, want %v", c.name, got, c.want)
		}
	}
}
