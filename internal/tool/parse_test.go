package tool

import "testing"

func TestThreads(t *testing.T) {
	cases := []struct {
		name        string
		cpus        float64
		connections int
		want        int
	}{
		{"default when the CPU is unknown", 0, 100, 2},
		{"one per CPU", 1, 100, 1},
		{"a fraction of a CPU still needs a thread", 0.5, 100, 1},
		{"rounded up", 1.5, 100, 2},
		{"never more than connections", 4, 3, 3},
		{"at least one", 0, 0, 1},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := Threads(Invocation{ClientCPUs: c.cpus}, c.connections, 2); got != c.want {
				t.Errorf("Threads = %d, want %d", got, c.want)
			}
		})
	}
}
