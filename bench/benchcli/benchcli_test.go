package benchcli

import (
	"bytes"
	"errors"
	"io"
	"testing"
)

// TestRun: help exits 0, bad flags 2 and a failed run 1, each error after the command's name;
// the bench runs only on good flags.
func TestRun(t *testing.T) {
	parse := func(args []string, stderr io.Writer) (int, error) {
		fs := FlagSet("bench-x", stderr)
		n := fs.Int("n", 1, "runs")
		return *n, fs.Parse(args)
	}
	for _, c := range []struct {
		args     []string
		runErr   error
		code     int
		ran      bool
		wantTail string
	}{
		{nil, nil, 0, true, ""},
		{[]string{"-h"}, nil, 0, false, "-n int\n    \truns (default 1)\n"},
		{[]string{"-n", "x"}, nil, 2, false, "bench-x: invalid value \"x\" for flag -n: parse error\n"},
		{nil, errors.New("boom"), 1, true, "bench-x: boom\n"},
	} {
		var stderr bytes.Buffer
		ran := false
		code := Run("bench-x", c.args, &stderr, parse, func(int) error { ran = true; return c.runErr })
		if code != c.code || ran != c.ran || !bytes.HasSuffix(stderr.Bytes(), []byte(c.wantTail)) {
			t.Errorf("%q: code %d, ran %v, stderr %q", c.args, code, ran, stderr.String())
		}
	}
}
