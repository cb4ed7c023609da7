package measure

import (
	"context"
	"fmt"

	"github.com/protobench/protobench/internal/record"
	"github.com/protobench/protobench/internal/scenario"
	"github.com/protobench/protobench/internal/tool"
)

// cellKey is a cell of a step: its runs differ only by repeat.
type cellKey struct{ step, target, tool string }

// cellUsage is what a repeat measured: whether its tool filled its core (record.ToolFilledItsCore),
// and each side's CPU as a percentage of its cap, for the log.
type cellUsage struct {
	repeat               int
	filled               bool
	clientPct, serverPct float64
}

// Place puts the observability stack where this run's tool leaves room for it, before the
// tool's warm-up so that the move is not measured. A failed move is a warning: the stack stays
// where it was, and the record says where that is.
func (s *Measurer) Place(ctx context.Context, a tool.Adapter, r scenario.Run, rec *record.Record) {
	if s.Placer == nil {
		return
	}
	bound, why := s.clientBound(a, r)
	want := s.Layout.StackCPUSet(bound)
	if want != s.stackAt {
		if err := s.Placer.PlaceStack(ctx, s.Observability, want); err != nil {
			s.Log("warning: moving the observability stack to cpuset %s for %s: %v", want, a.Name(), err)
		} else {
			s.Log("observability stack on cpuset %s for %s (%s; %s)", want, a.Name(), stackReason(s.Layout, want), why)
			s.stackAt = want
		}
	}
	rec.ObservabilityCPUSet = s.stackAt
}

// clientBound says whether the run's tool will fill its core while the server's has room. The
// cell's previous repeat decides when there was one (record.ToolFilledItsCore). Before that, the tool's declared capability does (k6
// and ghz spend more CPU per request than the servers), which a step can belie both ways: wrk on
// many connections fills its core, and k6 at a low open-model rate does not.
func (s *Measurer) clientBound(a tool.Adapter, r scenario.Run) (bool, string) {
	if u, ok := s.lastUsage[cellKey{r.Step, r.Target, r.Tool}]; ok {
		return u.filled, fmt.Sprintf("repeat %d measured %s at %.0f %% of its CPU cap, the server at %.0f %%", u.repeat, r.Tool, u.clientPct, u.serverPct)
	}
	if a.Capabilities().ClientBound {
		return true, "declared client-bound"
	}
	return false, "not declared client-bound"
}

// Note keeps what a finished run measured for its cell's next repeat. A failed run, or
// one without both sides' CPU (a server of the user's own, metrics missing), decides nothing.
func (s *Measurer) Note(r scenario.Run, rec record.Record) {
	filled, known := rec.ToolFilledItsCore()
	if !known {
		return
	}
	if s.lastUsage == nil {
		s.lastUsage = map[cellKey]cellUsage{}
	}
	s.lastUsage[cellKey{r.Step, r.Target, r.Tool}] = cellUsage{r.Repeat, filled, rec.ClientCPUPercentOfCap, rec.ServerCPUPercentOfCap}
}

func stackReason(l scenario.Layout, cpuset string) string {
	if cpuset == l.ServerCPUSet && cpuset != l.ObservabilityCPUSet {
		return "a client-bound tool: the server's core has the room"
	}
	return "the layout's place for it"
}
