package scenario

import (
	"strings"
	"testing"

	"github.com/protobench/protobench/internal/cputopo"
	"github.com/protobench/protobench/internal/record"
)

func TestStackCPUSetFollowsTheSlack(t *testing.T) {
	overridden := AutoLayout(cputopo.Flat(4, ""))
	overridden.ObservabilityCPUSet = overridden.ClientCPUSet
	cases := []struct {
		name        string
		layout      Layout
		clientBound bool
		want        string
	}{
		{"2 cores, lean tool: the client's core", AutoLayout(cputopo.Flat(2, "")), false, "1"},
		{"2 cores, client-bound tool: the server's core", AutoLayout(cputopo.Flat(2, "")), true, "0"},
		{"1 core: nowhere else", AutoLayout(cputopo.Flat(1, "")), true, "0"},
		{"4 cores: a core of its own, whatever the tool", AutoLayout(cputopo.Flat(4, "")), true, "3"},
		{"override onto the client's cores: the server's", overridden, true, overridden.ServerCPUSet},
	}
	for _, c := range cases {
		if got := c.layout.StackCPUSet(c.clientBound); got != c.want {
			t.Errorf("%s: StackCPUSet(%v) = %q, want %q", c.name, c.clientBound, got, c.want)
		}
	}
}

// laptop is a 4-core / 8-thread laptop whose SMT siblings are (n, n+4), as a topology.
func laptop() *cputopo.Topology {
	t := &cputopo.Topology{Threads: map[int]int{}}
	for id := 0; id < 8; id++ {
		t.CPUs = append(t.CPUs, cputopo.CPU{ID: id, Core: id % 4})
		t.Threads[id%4]++
	}
	return t
}

func TestLayoutOnSiblingsRefusedAtItsLine(t *testing.T) {
	src := "name: l\ndescription: d\nlayout:\n  server_cpuset: \"0\"\n  client_cpuset: 4-5\nsteps:\n  - {name: s, targets: [grpc], method: Echo}\n"
	sc := mustParse(t, src)
	_, err := sc.Plan(PlanOptions{Topology: laptop()})
	want := "t.yaml:5: layout.client_cpuset: server CPU 0 and client CPU 4 are SMT siblings of one physical core"
	if err == nil || !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), "--force-layout") {
		t.Fatalf("err = %v, want %q and the way out", err, want)
	}
	p, err := sc.Plan(PlanOptions{Topology: laptop(), ForceLayout: true})
	if err != nil {
		t.Fatal(err)
	}
	l := p.Layout
	if !l.Forced || l.ServerCPUSet != "0" || l.ClientCPUSet != "4-5" || !contains(l.Flags, record.FlagSMTShared) || l.Shared {
		t.Errorf("forced layout = %+v", l)
	}
	if !strings.Contains(l.Reason, "kept by --force-layout although server CPU 0 and client CPU 4") {
		t.Errorf("reason: %s", l.Reason)
	}
	// Whole cores apart are fine without the flag.
	ok := mustParse(t, "name: l\ndescription: d\nlayout:\n  server_cpuset: 0,4\n  client_cpuset: 1-2,5-6\nsteps:\n  - {name: s, targets: [grpc], method: Echo}\n")
	p, err = ok.Plan(PlanOptions{Topology: laptop()})
	if err != nil || len(p.Layout.Flags) != 0 {
		t.Errorf("whole cores apart: %v %+v", err, p.Layout)
	}
}

func TestAutoLayoutOnTheLaptopKeepsCoresApart(t *testing.T) {
	l := AutoLayout(laptop())
	if l.ServerCPUSet != "0,4" || l.ClientCPUSet != "1-2,5-6" || l.ObservabilityCPUSet != "3,7" || len(l.Flags) != 0 || l.Reason == "" {
		t.Errorf("layout = %+v", l)
	}
	one := &cputopo.Topology{CPUs: []cputopo.CPU{{ID: 0}, {ID: 1}}, Threads: map[int]int{0: 2}}
	if l := AutoLayout(one); !contains(l.Flags, record.FlagSMTShared) || l.Shared {
		t.Errorf("one core, two threads: %+v", l)
	}
}
