package scenario

import (
	"bytes"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/protobench/protobench/internal/cputopo"
)

const planSrc = `name: p
description: plan test
defaults:
  warmup: 5s
  duration: 30s
  repeats: 2
  cooldown: 2s
steps:
  - name: sweep
    targets: [grpc, rest]
    tools: [protobench, ghz, wrk]
    method: Echo
    matrix:
      connections: [1, 8]
      payload_bytes: [128, 1KiB]
  - name: short
    targets: [netrpc]
    method: Multiply
    warmup: 1s
    duration: 3s
    repeats: 1
    cooldown: 0s
`

func TestVariants(t *testing.T) {
	sc := mustParse(t, planSrc)
	st, _ := sc.Step("sweep")
	var names []string
	for _, v := range st.Variants() {
		names = append(names, v.Name)
	}
	want := []string{"sweep-conn1-p128b", "sweep-conn1-p1kib", "sweep-conn8-p128b", "sweep-conn8-p1kib"}
	if !reflect.DeepEqual(names, want) {
		t.Errorf("variants = %v, want %v", names, want)
	}
	v, ok := sc.Variant("sweep-conn8-p1kib")
	if !ok || v.Connections != 8 || v.PayloadBytes != 1024 || v.Concurrency != 1 {
		t.Errorf("Variant = %+v, %v", v, ok)
	}
}

func TestPlanExpansion(t *testing.T) {
	sc := mustParse(t, planSrc)
	p, err := sc.Plan(PlanOptions{Cores: 2})
	if err != nil {
		t.Fatal(err)
	}
	// sweep: 4 variants × 2 repeats × (grpc: protobench, ghz; rest: protobench, wrk) = 32; short: 1.
	if len(p.Runs) != 33 {
		t.Fatalf("%d runs, want 33", len(p.Runs))
	}
	first := []string{
		"001-sweep-conn1-p128b-grpc-protobench-r1",
		"002-sweep-conn1-p128b-grpc-ghz-r1",
		"003-sweep-conn1-p128b-rest-protobench-r1",
		"004-sweep-conn1-p128b-rest-wrk-r1",
		"005-sweep-conn1-p1kib-grpc-protobench-r1", // every variant of a repeat before the next repeat
	}
	for i, id := range first {
		if p.Runs[i].ID != id {
			t.Errorf("run %d = %s, want %s", i, p.Runs[i].ID, id)
		}
	}
	last := p.Runs[32]
	if last.ID != "033-short-netrpc-protobench-r1" || last.Warmup != time.Second || last.Duration != 3*time.Second {
		t.Errorf("last run = %+v", last)
	}
	// 32 × (3+5+30+2) + (3+1+3+0) = 1280 + 7 seconds.
	if want := 1287 * time.Second; p.TotalDuration != want {
		t.Errorf("total = %s, want %s", p.TotalDuration, want)
	}
	r := p.Runs[0]
	if r.Model != ModelClosed || r.BaseStep != "sweep" || r.Step != "sweep-conn1-p128b" || r.PayloadBytes != 128 || r.Repeats != 2 {
		t.Errorf("run fields = %+v", r)
	}
	if r.Caps.ServerCPUs != 1 || r.Caps.ClientCPUs != 1 || r.Caps.ServerMemoryBytes != DefaultServerMemoryBytes {
		t.Errorf("caps = %+v", r.Caps)
	}
	if r.Layout.ServerCPUSet != "0" || r.Layout.ClientCPUSet != "1" {
		t.Errorf("layout = %+v", r.Layout)
	}
}

func TestPlanOptions(t *testing.T) {
	sc := mustParse(t, planSrc)
	cases := []struct {
		name    string
		opts    PlanOptions
		runs    int
		timing  Timing // of the first run, Repeats from Run.Repeats
		errText string
	}{
		{"quick cuts to the budget", PlanOptions{Quick: true}, 17,
			Timing{Warmup: 2 * time.Second, Duration: 5 * time.Second, Repeats: 1, Cooldown: 500 * time.Millisecond}, ""},
		{"repeat overrides", PlanOptions{Repeat: 3}, 51,
			Timing{Warmup: 5 * time.Second, Duration: 30 * time.Second, Repeats: 3, Cooldown: 2 * time.Second}, ""},
		{"repeat beats quick", PlanOptions{Quick: true, Repeat: 2}, 34,
			Timing{Warmup: 2 * time.Second, Duration: 5 * time.Second, Repeats: 2, Cooldown: 500 * time.Millisecond}, ""},
		{"only substring", PlanOptions{Only: "short"}, 1,
			Timing{Warmup: time.Second, Duration: 3 * time.Second, Repeats: 1}, ""},
		{"only glob on variants", PlanOptions{Only: "sweep-conn8-*"}, 16,
			Timing{Warmup: 5 * time.Second, Duration: 30 * time.Second, Repeats: 2, Cooldown: 2 * time.Second}, ""},
		{"only list", PlanOptions{Only: "p1kib, short"}, 17,
			Timing{Warmup: 5 * time.Second, Duration: 30 * time.Second, Repeats: 2, Cooldown: 2 * time.Second}, ""},
		{"tools filter", PlanOptions{Tools: []string{"wrk"}}, 8,
			Timing{Warmup: 5 * time.Second, Duration: 30 * time.Second, Repeats: 2, Cooldown: 2 * time.Second}, ""},
		{"only matches nothing", PlanOptions{Only: "nope"}, 0, Timing{}, `--only "nope" matches no step; steps are sweep, sweep-conn1-p128b`},
		{"tools leave nothing", PlanOptions{Only: "short", Tools: []string{"k6"}}, 0, Timing{}, "leaves no run"},
		{"unknown tool", PlanOptions{Tools: []string{"ab"}}, 0, Timing{}, `unknown tool "ab"`},
		{"bad glob", PlanOptions{Only: "[x"}, 0, Timing{}, "bad pattern"},
		{"negative repeat", PlanOptions{Repeat: -1}, 0, Timing{}, "--repeat"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			tc.opts.Cores = 2
			p, err := sc.Plan(tc.opts)
			if tc.errText != "" {
				if err == nil || !strings.Contains(err.Error(), tc.errText) {
					t.Fatalf("err = %v, want %q", err, tc.errText)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if len(p.Runs) != tc.runs {
				t.Errorf("%d runs, want %d", len(p.Runs), tc.runs)
			}
			r := p.Runs[0]
			got := Timing{Warmup: r.Warmup, Duration: r.Duration, Repeats: r.Repeats, Cooldown: r.Cooldown}
			if got != tc.timing {
				t.Errorf("timing = %+v, want %+v", got, tc.timing)
			}
		})
	}
}

// TestPlanIDsStableUnderFilters: a run keeps its ID whatever --only and --tools leave out,
// so --resume can find it again.
func TestPlanIDsStableUnderFilters(t *testing.T) {
	sc := mustParse(t, planSrc)
	full, _ := sc.Plan(PlanOptions{Cores: 2})
	part, err := sc.Plan(PlanOptions{Cores: 2, Only: "short", Tools: []string{"protobench"}})
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := full.RunByID(part.Runs[0].ID); !ok {
		t.Errorf("filtered run %s not in the full plan", part.Runs[0].ID)
	}
}

func TestQuickTiming(t *testing.T) {
	cases := []struct {
		name    string
		in, out Timing
	}{
		{"long run is cut", Timing{5 * time.Second, 30 * time.Second, 5, 2 * time.Second}, Timing{2 * time.Second, 5 * time.Second, 1, 500 * time.Millisecond}},
		{"short run is kept", Timing{time.Second, 3 * time.Second, 3, 0}, Timing{time.Second, 3 * time.Second, 1, 0}},
		{"long warm-up is cut first", Timing{9 * time.Second, 5 * time.Second, 1, 0}, Timing{2 * time.Second, 5 * time.Second, 1, 0}},
		{"exactly the budget", Timing{2 * time.Second, 5 * time.Second, 2, 0}, Timing{2 * time.Second, 5 * time.Second, 1, 0}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := adjustTiming(tc.in, PlanOptions{Quick: true}); got != tc.out {
				t.Errorf("got %+v, want %+v", got, tc.out)
			}
		})
	}
}

func TestAutoLayout(t *testing.T) {
	cases := []struct {
		cores                 int
		server, client, obser string
		shared                bool
	}{
		{1, "0", "0", "0", true},
		{2, "0", "1", "1", false},
		{3, "0", "1", "2", false},
		{4, "0", "1-2", "3", false},
		{8, "0-2", "3-6", "7", false},
		{16, "0-6", "7-14", "15", false},
	}
	for _, tc := range cases {
		l := AutoLayout(cputopo.Flat(tc.cores, ""))
		if l.ServerCPUSet != tc.server || l.ClientCPUSet != tc.client || l.ObservabilityCPUSet != tc.obser || l.Shared != tc.shared {
			t.Errorf("AutoLayout(%d) = %+v", tc.cores, l)
		}
	}
}

func TestPlanCapsAndKnobs(t *testing.T) {
	src := `name: c
description: caps
caps:
  server_cpus: 4
  server_memory: 2GiB
servers:
  grpc:
    cpus: 0.5
    knobs: {max_concurrent_streams: 100000}
steps:
  - name: a
    targets: [grpc, rest]
    method: Echo
  - name: b
    targets: [grpc]
    method: Echo
    caps: {server_memory: 256MiB}
    servers:
      grpc:
        knobs: {max_payload_bytes: 1MiB}
`
	sc := mustParse(t, src)
	p, err := sc.Plan(PlanOptions{Cores: 2, Repeat: 1})
	if err != nil {
		t.Fatal(err)
	}
	byID := map[string]Run{}
	for _, r := range p.Runs {
		byID[r.Step+"/"+r.Target] = r
	}
	if c := byID["a/grpc"].Caps; c.ServerCPUs != 0.5 || c.ServerMemoryBytes != 2<<30 {
		t.Errorf("a/grpc caps = %+v: the per-target cap beats the shared one", c)
	}
	if c := byID["a/rest"].Caps; c.ServerCPUs != 1 {
		t.Errorf("a/rest cpus = %v: 4 must be clamped to the 1-core server cpuset", c.ServerCPUs)
	}
	if !strings.Contains(strings.Join(p.Notes, "\n"), "rest server cap 4 cpus lowered to 1") {
		t.Errorf("no clamp note: %v", p.Notes)
	}
	b := byID["b/grpc"]
	if b.Caps.ServerMemoryBytes != 256<<20 || b.Caps.ServerCPUs != 0.5 {
		t.Errorf("b caps = %+v: the step's memory cap beats the scenario's", b.Caps)
	}
	wantEnv := map[string]string{"PROTOBENCH_GRPC_MAX_CONCURRENT_STREAMS": "100000", "PROTOBENCH_MAX_PAYLOAD_BYTES": "1048576"}
	if !reflect.DeepEqual(b.Env, wantEnv) {
		t.Errorf("env = %v, want %v", b.Env, wantEnv)
	}
	py := mustParse(t, "name: py\ndescription: d\nservers:\n  python-grpc:\n    knobs: {mode: aio, threads: 4}\nsteps:\n  - {name: s, targets: [python-grpc], method: Echo}\n")
	pp, err := py.Plan(PlanOptions{Cores: 2})
	if err != nil {
		t.Fatal(err)
	}
	wantPy := map[string]string{"PROTOBENCH_PY_MODE": "aio", "PROTOBENCH_PY_THREADS": "4"}
	if !reflect.DeepEqual(pp.Runs[0].Env, wantPy) || pp.Runs[0].Knobs["mode"] != "aio" {
		t.Errorf("python env = %v knobs = %v, want %v", pp.Runs[0].Env, pp.Runs[0].Knobs, wantPy)
	}
	if len(byID["a/rest"].Env) != 0 {
		t.Errorf("rest env = %v, want none", byID["a/rest"].Env)
	}
}

func TestPlanLayoutOverride(t *testing.T) {
	src := "name: l\ndescription: d\nlayout:\n  server_cpuset: 0-1\n  client_cpuset: \"1\"\nsteps:\n  - {name: s, targets: [grpc], method: Echo}\n"
	sc := mustParse(t, src)
	p, err := sc.Plan(PlanOptions{Cores: 4})
	if err != nil {
		t.Fatal(err)
	}
	if !p.Layout.Shared || p.Runs[0].Caps.ServerCPUs != 2 || p.Layout.ObservabilityCPUSet != "3" {
		t.Errorf("layout = %+v caps = %+v", p.Layout, p.Runs[0].Caps)
	}
	_, err = sc.Plan(PlanOptions{Cores: 1})
	if err == nil || !strings.Contains(err.Error(), "t.yaml:4: layout.server_cpuset: cpu 1 does not exist on this 1-core host") {
		t.Errorf("err = %v", err)
	}
	if !strings.Contains(err.Error(), "t.yaml:5: layout.client_cpuset:") {
		t.Errorf("client cpuset error should point at its own line: %v", err)
	}
}

func TestPrint(t *testing.T) {
	sc := mustParse(t, planSrc)
	p, err := sc.Plan(PlanOptions{Cores: 2, Quick: true, Only: "short"})
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if err := p.Print(&buf); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"scenario  p: plan test", "sha256 ", "server cpuset 0, client cpuset 1", `quick (each run at most 7s`, `only "short"`,
		"017-short-netrpc-protobench-r1", "total     1 runs in 1 steps, estimated 7s"} {
		if !strings.Contains(buf.String(), want) {
			t.Errorf("dry-run output lacks %q:\n%s", want, buf.String())
		}
	}
}

func TestFind(t *testing.T) {
	dir := t.TempDir()
	for name, body := range map[string]string{"alpha": "name: alpha\ndescription: first\nsteps:\n  - {name: s, targets: [grpc], method: Echo}\n", "beta": "name: beta\n"} {
		if err := os.WriteFile(filepath.Join(dir, name+".yaml"), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if sc, err := Find("alpha", dir); err != nil || sc.Name != "alpha" {
		t.Errorf("Find(alpha) = %v, %v", sc, err)
	}
	if sc, err := Find(filepath.Join(dir, "alpha.yaml"), "/nonexistent"); err != nil || sc.Name != "alpha" {
		t.Errorf("Find(path) = %v, %v", sc, err)
	}
	_, err := Find("gamma", dir)
	if err == nil || !strings.Contains(err.Error(), `unknown scenario "gamma"; available: alpha, beta`) {
		t.Errorf("Find(gamma) err = %v", err)
	}
	if _, err := Find("./missing.yaml", dir); err == nil || !strings.Contains(err.Error(), "does not exist") {
		t.Errorf("Find(missing path) err = %v", err)
	}
	entries, err := List(dir, 2)
	if err != nil || len(entries) != 2 {
		t.Fatalf("List = %v, %v", entries, err)
	}
	if entries[0].Name != "alpha" || entries[0].Runs != 3 || entries[0].Err != nil {
		t.Errorf("alpha entry = %+v", entries[0])
	}
	if entries[1].Err == nil {
		t.Errorf("beta should be broken: %+v", entries[1])
	}
	var buf bytes.Buffer
	if err := PrintList(&buf, entries); err != nil || !strings.Contains(buf.String(), "BROKEN") || !strings.Contains(buf.String(), "first") {
		t.Errorf("PrintList = %q, %v", buf.String(), err)
	}
}

// The pattern is a client knob: the step's beats the scenario's, the target's default fills in,
// a custom ZeroMQ target takes one of its own, and none of it reaches the server's knobs or
// environment, only the run's Pattern (and so the tool's --zmq-pattern and the dry-run table).
func TestPlanPatternKnob(t *testing.T) {
	src := `name: p
description: patterns
servers:
  zeromq:
    knobs: {pattern: req, sndhwm: 1000}
custom_targets:
  my-zmq:
    image: me/zmq:1
    protocol: zmq
    port: 5555
steps:
  - name: scenario-wide
    targets: [zeromq]
    method: Echo
  - name: on-the-step
    targets: [zeromq, my-zmq]
    method: Echo
    in_flight: 8
    servers:
      zeromq:
        knobs: {pattern: push}
      my-zmq:
        knobs: {pattern: req}
  - name: default
    targets: [my-zmq, grpc]
    method: Echo
    in_flight: 8
`
	p, err := mustParse(t, src).Plan(PlanOptions{Cores: 2, Repeat: 1})
	if err != nil {
		t.Fatal(err)
	}
	type want struct {
		pattern                  string
		connections, concurrency int
	}
	wants := map[string]want{
		"scenario-wide/zeromq": {"req", 1, 1},
		"on-the-step/zeromq":   {"push", 1, 8}, // PUSH multiplexes: one socket carries all 8
		"on-the-step/my-zmq":   {"req", 8, 1},  // REQ has one request in flight per socket
		"default/my-zmq":       {"dealer", 1, 8},
		"default/grpc":         {"", 1, 8},
	}
	for _, r := range p.Runs {
		key := r.Step + "/" + r.Target
		w, ok := wants[key]
		if !ok {
			t.Errorf("unexpected run %s", key)
			continue
		}
		delete(wants, key)
		if r.Pattern != w.pattern || r.Connections != w.connections || r.Concurrency != w.concurrency {
			t.Errorf("%s: pattern %q, %d×%d; want %q, %d×%d", key, r.Pattern, r.Connections, r.Concurrency, w.pattern, w.connections, w.concurrency)
		}
		if _, ok := r.Knobs["pattern"]; ok {
			t.Errorf("%s: server knobs %v hold the client's pattern", key, r.Knobs)
		}
		if r.Target == "zeromq" && (!reflect.DeepEqual(r.Env, map[string]string{"PROTOBENCH_ZMQ_SNDHWM": "1000"}) || r.Knobs["sndhwm"] != "1000") {
			t.Errorf("%s: env %v, knobs %v; want the server knob sndhwm alone", key, r.Env, r.Knobs)
		}
	}
	for key := range wants {
		t.Errorf("no run %s", key)
	}
	var b strings.Builder
	if err := p.Print(&b); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(b.String(), "Echo (push)") || !strings.Contains(b.String(), "Echo (req)") {
		t.Errorf("the dry-run table does not name the patterns:\n%s", b.String())
	}
}
