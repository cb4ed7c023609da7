package measure

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/protobench/protobench/internal/cputopo"
	"github.com/protobench/protobench/internal/record"
	"github.com/protobench/protobench/internal/scenario"
	"github.com/protobench/protobench/internal/tool"
	_ "github.com/protobench/protobench/internal/tool/k6"
	_ "github.com/protobench/protobench/internal/tool/protobenchtool"
)

// movesRecorder is a Placer that keeps the moves it was asked for, and fails them while
// failing is set.
type movesRecorder struct {
	moves   []string
	failing bool
}

func (m *movesRecorder) PlaceStack(_ context.Context, services []string, cpuset string) error {
	if m.failing {
		return errors.New("daemon said no")
	}
	m.moves = append(m.moves, fmt.Sprintf("%s->%s", strings.Join(services, ","), cpuset))
	return nil
}

// TestPlaceStackFollowsTheTool: on two cores the stack starts where the layout puts it, moves to
// the server's core for k6 (client-bound), stays there for a second k6 run, and comes back for
// our generator; each record says where the stack was. A move that fails leaves the stack (and
// the record) where it was.
func TestPlaceStackFollowsTheTool(t *testing.T) {
	var logs []string
	rec := &movesRecorder{}
	sr := &Measurer{Placer: rec, Layout: scenario.AutoLayout(cputopo.Flat(2, "")), Observability: []string{"prometheus", "cadvisor"},
		Log: func(f string, a ...any) { logs = append(logs, fmt.Sprintf(f, a...)) }}
	var got []string
	for _, name := range []string{"protobench", "k6", "k6", "protobench"} {
		a, ok := tool.Lookup(name)
		if !ok {
			t.Fatalf("no adapter %s", name)
		}
		var r record.Record
		sr.Place(context.Background(), a, scenario.Run{Step: "s", Target: "grpc", Tool: name, Repeat: 1}, &r)
		got = append(got, r.ObservabilityCPUSet)
	}
	if want := []string{"1", "0", "0", "1"}; !slices.Equal(got, want) {
		t.Errorf("records' cpusets %v, want %v", got, want)
	}
	if want := []string{"prometheus,cadvisor->1", "prometheus,cadvisor->0", "prometheus,cadvisor->1"}; !slices.Equal(rec.moves, want) {
		t.Errorf("moves %v, want %v", rec.moves, want)
	}

	rec.failing = true
	k6, _ := tool.Lookup("k6")
	var r record.Record
	sr.Place(context.Background(), k6, scenario.Run{Step: "s", Target: "grpc", Tool: "k6", Repeat: 1}, &r)
	if r.ObservabilityCPUSet != "1" {
		t.Errorf("after a failed move the record says %q, want the stack's real place 1", r.ObservabilityCPUSet)
	}
	if last := logs[len(logs)-1]; !strings.Contains(last, "warning") || !strings.Contains(last, "daemon said no") {
		t.Errorf("a failed move logged %q", last)
	}

	// Without a placer (swarm) nothing moves and records say nothing.
	sr = &Measurer{Layout: scenario.AutoLayout(cputopo.Flat(2, ""))}
	r = record.Record{}
	sr.Place(context.Background(), k6, scenario.Run{Step: "s", Target: "grpc", Tool: "k6", Repeat: 1}, &r)
	if r.ObservabilityCPUSet != "" {
		t.Errorf("without a placer the record says %q", r.ObservabilityCPUSet)
	}
}

// TestPlaceStackFollowsTheMeasurement: from a cell's second repeat on, what the first measured
// decides, both ways: our generator found at 96 % of its cap with the server at 60 % gets the
// stack off its core; k6 found at 40 % (a low open-model rate) with the server at 70 % keeps it;
// and a tool at its cap beside a server at its own cap keeps it too (the server's core has no
// room). A failed repeat, or one without the server's CPU, decides nothing.
func TestPlaceStackFollowsTheMeasurement(t *testing.T) {
	var logs []string
	sr := &Measurer{Placer: &movesRecorder{}, Layout: scenario.AutoLayout(cputopo.Flat(2, "")), Observability: []string{"prometheus"},
		Log: func(f string, a ...any) { logs = append(logs, fmt.Sprintf(f, a...)) }}
	place := func(r scenario.Run) string {
		a, ok := tool.Lookup(r.Tool)
		if !ok {
			t.Fatalf("no adapter %s", r.Tool)
		}
		var rec record.Record
		sr.Place(context.Background(), a, r, &rec)
		return rec.ObservabilityCPUSet
	}
	type repeat struct {
		tool           string
		client, server float64
		err            string
		first, second  string
	}
	for _, c := range []struct {
		name string
		repeat
	}{
		{"generator at its cap", repeat{tool: "protobench", client: 96, server: 60, first: "1", second: "0"}},
		{"k6 with room", repeat{tool: "k6", client: 40, server: 70, first: "0", second: "1"}},
		{"both at their caps", repeat{tool: "protobench", client: 97, server: 99, first: "1", second: "1"}},
		{"a failed repeat", repeat{tool: "protobench", client: 96, server: 60, err: "boom", first: "1", second: "1"}},
		{"no server CPU", repeat{tool: "k6", client: 40, server: 0, first: "0", second: "0"}},
	} {
		step := strings.ReplaceAll(c.name, " ", "-")
		r1 := scenario.Run{Step: step, Target: "grpc", Tool: c.tool, Repeat: 1}
		if got := place(r1); got != c.first {
			t.Errorf("%s: repeat 1 put the stack on %q, want %q (the declaration)", c.name, got, c.first)
		}
		sr.Note(r1, record.Record{ClientCPUPercentOfCap: c.client, ServerCPUPercentOfCap: c.server, Error: c.err})
		r2 := r1
		r2.Repeat = 2
		if got := place(r2); got != c.second {
			t.Errorf("%s: repeat 2 put the stack on %q, want %q", c.name, got, c.second)
		}
		// Another target of the same step has no measurement yet: its tool's declaration decides.
		other := r2
		other.Target = "rest"
		if got := place(other); got != c.first {
			t.Errorf("%s: another target's first repeat put the stack on %q, want %q", c.name, got, c.first)
		}
	}
	if !slices.ContainsFunc(logs, func(l string) bool {
		return strings.Contains(l, "repeat 1 measured protobench at 96 % of its CPU cap, the server at 60 %")
	}) {
		t.Errorf("no move said why; logs:\n%s", strings.Join(logs, "\n"))
	}
}
