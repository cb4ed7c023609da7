package runner

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/protobench/protobench/internal/tool"
	"github.com/protobench/protobench/internal/tool/protobenchtool"
)

// renamed is protobench's generator under another name, with Parts as given: whether a step
// splits follows the declared capability, never the tool's name.
type renamed struct {
	protobenchtool.Adapter
	name  string
	parts tool.PartsMerger
}

func (r renamed) Name() string { return r.name }

func (r renamed) Capabilities() tool.Capabilities {
	c := r.Adapter.Capabilities()
	c.Parts = r.parts
	return c
}

func TestSplitter(t *testing.T) {
	inv := tool.Invocation{Target: "grpc", Address: "grpc:50051", Scheme: "grpc", Method: "Echo", Model: "closed",
		Connections: 4, Concurrency: 2, PayloadBytes: 64, RawDir: "/raw", RawPrefix: "r1", Duration: 2e9}
	cases := []struct {
		name   string
		a      tool.Adapter
		splits bool
	}{
		{"protobench's generator declares Parts", protobenchtool.Adapter{}, true},
		{"another name with Parts splits", renamed{name: "other", parts: protobenchtool.Adapter{}}, true},
		{"protobench's name without Parts does not", renamed{name: "protobench"}, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			parts := splitter(c.a, inv)
			if (parts != nil) != c.splits {
				t.Fatalf("splitter: %v, want a split: %v", parts != nil, c.splits)
			}
			if parts == nil {
				return
			}
			start := time.Date(2026, 11, 28, 10, 0, 0, 500e6, time.UTC)
			args, merge, err := parts(2, start)
			if err != nil || len(args) != 2 || merge == nil {
				t.Fatalf("split in 2: %v %v", args, err)
			}
			if !slices.ContainsFunc(args[1], func(s string) bool { return strings.Contains(s, "r1.part2") }) {
				t.Errorf("part 2 writes its own files: %q", args[1])
			}
			// Every part starts at the one instant the engine gave, so that they measure one window.
			for k, a := range args {
				if i := slices.Index(a, "--start-at"); i < 0 || i+1 == len(a) || a[i+1] != "2026-11-28T10:00:00.5Z" {
					t.Errorf("part %d: %q, want --start-at 2026-11-28T10:00:00.5Z", k+1, a)
				}
			}
			if _, _, err := parts(9, start); err == nil {
				t.Error("8 requests in flight split among 9 clients")
			}
		})
	}
	if ghz, ok := tool.Lookup("ghz"); ok && splitter(ghz, inv) != nil {
		t.Error("ghz's results cannot be merged, so it must not split")
	}
}

// TestOneOffFromCapabilities: the tool container's entrypoint is the program the adapter
// declares, its live metrics what the adapter declares, and its inputs are the files
// InputFiles returns, by base name.
func TestOneOffFromCapabilities(t *testing.T) {
	s := &stepRunner{}
	inv := tool.Invocation{Target: "grpc", Address: "grpc:50051", Scheme: "grpc", Method: "Echo", Model: "closed",
		Connections: 1, Concurrency: 1, RawDir: "/raw", RawPrefix: "r1", Duration: 2e9}
	for _, name := range tool.Names() {
		a, _ := tool.Lookup(name)
		o := s.oneOff(a, nil, inv)
		if want := a.Capabilities().Program; o.Entrypoint != want || want == "" {
			t.Errorf("%s: entrypoint %q, want the declared program %q (every tool names one)", name, o.Entrypoint, want)
		}
		if want := a.Capabilities().LiveMetrics; o.LiveMetrics != want {
			t.Errorf("%s: live metrics %q, want the declared %q", name, o.LiveMetrics, want)
		}
		if name == "wrk2" && o.Entrypoint != "wrk2" {
			t.Errorf("wrk2 runs %q from the wrk service, want wrk2", o.Entrypoint)
		}
		if len(o.Inputs) != len(a.InputFiles(inv)) {
			t.Errorf("%s: inputs %v, want those of InputFiles", name, o.Inputs)
		}
	}
}
