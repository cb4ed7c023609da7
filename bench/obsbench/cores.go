package obsbench

import (
	"runtime"
	"strconv"
	"strings"

	"github.com/protobench/protobench/internal/scenario"
	"github.com/protobench/protobench/internal/tool"
)

// stackCores is where a run on this host puts the observability stack while the tool runs
// (scenario.AutoLayout, then Layout.StackCPUSet): the cores neither the server nor the generator
// has, or, when none is left, the generator's core, so that the server's core stays its own,
// unless the tool is client-bound (k6), whose steps leave the server's core the room.
func stackCores(server, client int, toolName string) string {
	l := scenario.Layout{ServerCPUSet: strconv.Itoa(server), ClientCPUSet: strconv.Itoa(client), ObservabilityCPUSet: otherCores(server, client)}
	if l.ObservabilityCPUSet == "" {
		l.ObservabilityCPUSet = l.ClientCPUSet
	}
	a, ok := tool.Lookup(toolName)
	return l.StackCPUSet(ok && a.Capabilities().ClientBound)
}

// otherCores is every online core but the two given, as a cpuset list; empty when none is left.
func otherCores(a, b int) string {
	n := numCPU()
	var out []string
	for c := 0; c < n; c++ {
		if c != a && c != b {
			out = append(out, strconv.Itoa(c))
		}
	}
	return strings.Join(out, ",")
}

func numCPU() int { return runtime.NumCPU() }
