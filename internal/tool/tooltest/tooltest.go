// Package tooltest is the test harness the tool adapters' tests share: table checks for Args,
// Check and Parse, and the golden files of real tool runs (reading them, checking Parse against
// them, and re-capturing them). Only tests import it; it is an ordinary package so that the
// adapters' test files can.
package tooltest

import (
	"reflect"
	"strings"
	"testing"

	"github.com/protobench/protobench/internal/record"
	"github.com/protobench/protobench/internal/tool"
)

// Registered checks that the adapter name is registered and runs in service, with the given
// OwnWarmup: the runner finds adapters by name only, so a missing init would go unnoticed.
func Registered(t *testing.T, name, service string, ownWarmup bool) {
	t.Helper()
	a, ok := tool.Lookup(name)
	if !ok {
		t.Fatalf("%s not registered", name)
	}
	if a.Service() != service || a.OwnWarmup() != ownWarmup {
		t.Errorf("%s: Service %q OwnWarmup %v", name, a.Service(), a.OwnWarmup())
	}
}

// With is inv changed by f, so that a table case says only how it differs from a base
// invocation.
func With(inv tool.Invocation, f func(*tool.Invocation)) tool.Invocation {
	f(&inv)
	return inv
}

// Join concatenates pieces of a command line, so that expected command lines can share their
// common parts.
func Join(parts ...[]string) []string {
	var out []string
	for _, p := range parts {
		out = append(out, p...)
	}
	return out
}

// Args checks that a accepts inv and builds exactly want from it: a command line the adapter
// itself would refuse is no expectation.
func Args(t *testing.T, a tool.Adapter, inv tool.Invocation, want []string) {
	t.Helper()
	if err := a.Check(inv); err != nil {
		t.Fatalf("Check: %v", err)
	}
	if got := a.Args(inv); !reflect.DeepEqual(got, want) {
		t.Errorf("Args =\n%q\nwant\n%q", got, want)
	}
}

// WantErr checks err against a table's expectation: "" wants no error, anything else an error
// that mentions it.
func WantErr(t *testing.T, err error, want string) {
	t.Helper()
	switch {
	case want == "" && err != nil:
		t.Errorf("unexpected error %v", err)
	case want != "" && (err == nil || !strings.Contains(err.Error(), want)):
		t.Errorf("error %v, want one mentioning %q", err, want)
	}
}

// withSettings is want with the fields Parse copies from the invocation filled in, so that an
// expectation lists only what the tool measured.
func withSettings(want record.Record, toolName string, inv tool.Invocation) record.Record {
	want.Target, want.Tool, want.Method, want.Model = inv.Target, toolName, inv.Method, inv.Model
	want.Connections, want.Concurrency, want.PayloadBytes = inv.Connections, inv.Concurrency, inv.PayloadBytes
	return want
}
