package compose

import (
	"strconv"
	"testing"

	"github.com/protobench/protobench/internal/scenario"
	"github.com/protobench/protobench/internal/tool"
	"github.com/protobench/protobench/internal/tool/k6"
)

// TestK6RuntimeFollowsTheAdapter: compose's k6 service runs with the collector setting the k6
// package chose and measured, and with a soft memory limit that the runner sets from the tool's
// cap, defaulting to what the default cap gives; the benches take both from k6.RuntimeEnv.
func TestK6RuntimeFollowsTheAdapter(t *testing.T) {
	var f composeFile
	readYAML(t, MainFile, &f)
	env := f.Services["k6"].Environment
	if env["GOGC"] != k6.GOGC {
		t.Errorf("compose's k6 GOGC = %q, want k6.GOGC %q", env["GOGC"], k6.GOGC)
	}
	want := "${PROTOBENCH_CLIENT_GOMEMLIMIT:-" + strconv.FormatInt(tool.GoMemLimit(scenario.DefaultClientMemoryBytes), 10) + "}"
	if env["GOMEMLIMIT"] != want {
		t.Errorf("compose's k6 GOMEMLIMIT = %q, want %q", env["GOMEMLIMIT"], want)
	}
	if env["GODEBUG"] != k6.GODEBUG {
		t.Errorf("compose's k6 GODEBUG = %q, want k6.GODEBUG %q", env["GODEBUG"], k6.GODEBUG)
	}
	got := k6.RuntimeEnv(scenario.DefaultClientMemoryBytes)
	if len(got) != 3 || got[0] != "GOGC="+k6.GOGC || got[1] != "GOMEMLIMIT=858993456" || got[2] != "GODEBUG="+k6.GODEBUG {
		t.Errorf("k6.RuntimeEnv(1 GiB) = %v", got)
	}
}
