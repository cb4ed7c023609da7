// Package drivertest runs the load command's arguments in tests of the drivers.
package drivertest

import (
	"context"
	"io"
	"strings"
	"testing"

	"github.com/protobench/protobench/internal/loadgen"
)

// Run parses args as `protobench load` does and runs them; a usage error fails the test. The
// run's own error is left in the result for the test to judge.
func Run(t testing.TB, args ...string) *loadgen.Result {
	t.Helper()
	cfg, _, err := loadgen.ParseArgs(args, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	res, err := loadgen.Run(context.Background(), cfg, loadgen.RunOptions{})
	if res == nil {
		t.Fatal(err)
	}
	return res
}

// RunClean is Run for a run that must complete requests, none failed, and count bytes sent
// and received (received only when countReceived: a ZeroMQ PUSH gets no reply).
func RunClean(t testing.TB, countReceived bool, args ...string) *loadgen.Result {
	t.Helper()
	res := Run(t, args...)
	if res.Requests == 0 || res.Errors != 0 {
		t.Fatalf("requests %d errors %d (%v; %s), want some and none (load %s)", res.Requests, res.Errors, res.ErrorsByCode, res.Error, strings.Join(args, " "))
	}
	if res.BytesSent == 0 || (countReceived && res.BytesReceived == 0) {
		t.Errorf("bytes sent %d received %d, want them counted", res.BytesSent, res.BytesReceived)
	}
	return res
}
