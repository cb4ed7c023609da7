package e2e

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// cli is the protobench binary under test and the checkout it runs on.
type cli struct{ bin, root string }

// requireE2E skips the test unless PROTOBENCH_E2E=1 (./run.sh test sets it) and returns the
// protobench binary to run (PROTOBENCH_BIN) and the checkout it runs on: PROTOBENCH_ROOT when set
// (another checkout whose images are built), else this one. what says what the test runs, for
// the skip message.
func requireE2E(t *testing.T, what string) cli {
	t.Helper()
	if os.Getenv("PROTOBENCH_E2E") != "1" {
		t.Skipf("set PROTOBENCH_E2E=1 (./run.sh test does) to run %s", what)
	}
	bin := os.Getenv("PROTOBENCH_BIN")
	if bin == "" {
		t.Fatal("PROTOBENCH_BIN must name the protobench binary")
	}
	root := os.Getenv("PROTOBENCH_ROOT")
	if root == "" {
		var err error
		if root, err = filepath.Abs("../.."); err != nil {
			t.Fatal(err)
		}
	}
	return cli{bin: bin, root: root}
}

// command is the CLI with args as ./run.sh starts it: in the checkout, with PROTOBENCH_ROOT
// naming it, and env added to this process's environment.
func (c cli) command(ctx context.Context, env []string, args ...string) *exec.Cmd {
	cmd := exec.CommandContext(ctx, c.bin, args...)
	cmd.Dir = c.root
	cmd.Env = append(append(os.Environ(), "PROTOBENCH_ROOT="+c.root), env...)
	return cmd
}

// run runs the CLI with args to its end and returns its output, stdout and stderr as they
// interleave.
func (c cli) run(ctx context.Context, args ...string) (string, error) {
	cmd := c.command(ctx, nil, args...)
	var buf bytes.Buffer
	cmd.Stdout, cmd.Stderr = &buf, &buf
	err := cmd.Run()
	return buf.String(), err
}
