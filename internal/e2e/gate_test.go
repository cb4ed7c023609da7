package e2e

import (
	"os"
	"path/filepath"
	"testing"
)

// requireE2E skips the test unless PROTOBENCH_E2E=1 (./run.sh test sets it) and returns the
// protobench binary to run (PROTOBENCH_BIN) and the checkout it runs on: PROTOBENCH_ROOT when set
// (another checkout whose images are built), else this one. what says what the test runs, for
// the skip message.
func requireE2E(t *testing.T, what string) (bin, root string) {
	t.Helper()
	if os.Getenv("PROTOBENCH_E2E") != "1" {
		t.Skipf("set PROTOBENCH_E2E=1 (./run.sh test does) to run %s", what)
	}
	bin = os.Getenv("PROTOBENCH_BIN")
	if bin == "" {
		t.Fatal("PROTOBENCH_BIN must name the protobench binary")
	}
	root = os.Getenv("PROTOBENCH_ROOT")
	if root == "" {
		var err error
		if root, err = filepath.Abs("../.."); err != nil {
			t.Fatal(err)
		}
	}
	return bin, root
}
