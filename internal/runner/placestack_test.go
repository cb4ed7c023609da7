package runner

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/protobench/protobench/internal/record"
	"github.com/protobench/protobench/internal/scenario"
	"github.com/protobench/protobench/internal/tool"
	_ "github.com/protobench/protobench/internal/tool/k6"
	_ "github.com/protobench/protobench/internal/tool/protobenchtool"
)

// movesRecorder is a stackPlacer that keeps the moves it was asked for, and fails them while
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
	sr := &stepRunner{placer: rec, layout: scenario.AutoLayout(2), observability: []string{"prometheus", "cadvisor"},
		log: func(f string, a ...any) { logs = append(logs, fmt.Sprintf(f, a...)) }}
	var got []string
	for _, name := range []string{"protobench", "k6", "k6", "protobench"} {
		a, ok := tool.Lookup(name)
		if !ok {
			t.Fatalf("no adapter %s", name)
		}
		var r record.Record
		sr.placeStack(context.Background(), a, &r)
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
	sr.placeStack(context.Background(), k6, &r)
	if r.ObservabilityCPUSet != "1" {
		t.Errorf("after a failed move the record says %q, want the stack's real place 1", r.ObservabilityCPUSet)
	}
	if last := logs[len(logs)-1]; !strings.Contains(last, "warning") || !strings.Contains(last, "daemon said no") {
		t.Errorf("a failed move logged %q", last)
	}

	// Without a placer (swarm) nothing moves and records say nothing.
	sr = &stepRunner{layout: scenario.AutoLayout(2)}
	r = record.Record{}
	sr.placeStack(context.Background(), k6, &r)
	if r.ObservabilityCPUSet != "" {
		t.Errorf("without a placer the record says %q", r.ObservabilityCPUSet)
	}
}
