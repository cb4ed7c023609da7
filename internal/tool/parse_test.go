package tool

import "testing"

func TestThreads(t *testing.T) {
	cases := []struct {
		name        string
		connections int
		want        int
	}{
		{"the cap", 100, 2},
		{"never more than connections", 1, 1},
		{"at least one", 0, 1},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := Threads(c.connections, 2); got != c.want {
				t.Errorf("Threads = %d, want %d", got, c.want)
			}
		})
	}
}
