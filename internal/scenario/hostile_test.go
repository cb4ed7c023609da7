package scenario

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// injectedKey is a key that, written unquoted into a compose file's environment block, ends the
// mapping and sets privileged: true at the service's own level.
const injectedKey = "A: '1'\n    privileged: true\n    B"

// TestEnvironmentKeyIsRefusedAtItsLine gives a custom target an environment key that is not a
// variable name (the injection above, in YAML's double-quoted form) beside a good one: the file
// is refused at that key's line and field, and the good key alone is not an error.
func TestEnvironmentKeyIsRefusedAtItsLine(t *testing.T) {
	text := `name: hostile
description: a scenario file from someone else
custom_targets:
  mine:
    image: me/server:1
    protocol: netrpc
    port: 4200
    environment:
      GOOD_KEY: ok
      "A: '1'\n    privileged: true\n    B": x
steps:
  - name: s
    targets: [mine]
    method: Echo
`
	_, err := Parse("hostile.yaml", []byte(text))
	var es Errors
	if !errors.As(err, &es) || len(es) != 1 {
		t.Fatalf("want one error, got %v", err)
	}
	e := es[0]
	if e.Line != 10 || !strings.HasPrefix(e.Field, "custom_targets.mine.environment.") || !strings.Contains(e.Msg, "variable name") {
		t.Errorf("error %q: want line 10, field custom_targets.mine.environment.<key>, and what is expected", e.Error())
	}
	if !strings.Contains(e.Error(), "hostile.yaml:10:") {
		t.Errorf("error %q does not name the file and line", e.Error())
	}
	for _, k := range []string{"GOOD_KEY", "_x", "a1"} {
		if !ValidEnvKey(k) {
			t.Errorf("%q refused", k)
		}
	}
	for _, k := range []string{injectedKey, "1A", "A-B", "A B", "A=B", "", "Ä"} {
		if ValidEnvKey(k) {
			t.Errorf("%q accepted", k)
		}
	}
}

// TestLargeScenarioFileIsRefused writes a file just over the limit: Load refuses it without
// parsing it, naming the file and the limit; Parse refuses the same bytes.
func TestLargeScenarioFileIsRefused(t *testing.T) {
	p := filepath.Join(t.TempDir(), "big.yaml")
	data := []byte("name: big\ndescription: padding\n# " + strings.Repeat("x", MaxFileBytes) + "\n")
	if err := os.WriteFile(p, data, 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := Load(p)
	if err == nil || !strings.Contains(err.Error(), p+":1:") || !strings.Contains(err.Error(), "1 MiB") {
		t.Fatalf("Load: got %v, want a refusal at %s:1 naming the limit", err, p)
	}
	if _, err := Parse("big.yaml", data); err == nil || !strings.Contains(err.Error(), "1 MiB") {
		t.Fatalf("Parse: got %v", err)
	}
}

// TestStreamKnobAboveItsBound: grpc's max_concurrent_streams above the registry's bound is
// refused at its line, naming the range; the bound itself is accepted.
func TestStreamKnobAboveItsBound(t *testing.T) {
	text := `name: bound
description: a knob above its bound
servers:
  grpc:
    knobs:
      max_concurrent_streams: %d
steps:
  - name: s
    targets: [grpc]
    method: Echo
`
	_, err := Parse("bound.yaml", []byte(fmt.Sprintf(text, 100001)))
	if err == nil || !strings.Contains(err.Error(), "bound.yaml:6:") || !strings.Contains(err.Error(), "from 1 to 100000") {
		t.Fatalf("max_concurrent_streams 100001: %v; want a refusal at line 6 naming the range", err)
	}
	if _, err := Parse("bound.yaml", []byte(fmt.Sprintf(text, 100000))); err != nil {
		t.Fatalf("max_concurrent_streams 100000: %v", err)
	}
}
