package scenario

import (
	"fmt"
	"math/rand/v2"
	"path"
	"runtime"
	"strings"
	"time"

	"github.com/protobench/protobench/internal/cputopo"
)

// StartOverhead is the time the estimate adds per run for starting the capped server, waiting
// until it is healthy and stopping it again (about 3 s with compose on the build machines).
const StartOverhead = 3 * time.Second

// Quick mode bounds: each run's warm-up plus measurement fits in QuickBudget, the warm-up takes
// at most QuickWarmup of it (a warm-up still matters: JIT-free Go servers need little, but
// connection set-up and HTTP/2 window growth do), and cool-downs shrink to QuickCooldown.
const (
	QuickBudget   = 7 * time.Second
	QuickWarmup   = 2 * time.Second
	QuickCooldown = 500 * time.Millisecond
)

// PlanOptions are the command-line choices that shape a plan.
type PlanOptions struct {
	Quick  bool     // every run at most QuickBudget (warm-up included) and one repeat
	Repeat int      // > 0: repeats for every step, overriding the file (and Quick's 1)
	Only   string   // step filter: comma-separated globs or substrings of step names
	Tools  []string // keep only runs with these tools
	Cores  int      // host cores for the CPU layout when Topology is nil; 0 means runtime.NumCPU()
	// Topology is the host's CPU topology the layout places on (cputopo.Host); nil means
	// cputopo.Flat(Cores): each CPU a core of its own. ForceLayout keeps a layout override that
	// puts server and client on SMT siblings of one core (--force-layout).
	Topology    *cputopo.Topology
	ForceLayout bool
	// Seed, when not 0, shuffles the order of the runs within each repeat of a step (see
	// shuffleRepeat); the same seed gives the same order, so a resume replays it.
	Seed uint64
}

// Run is one server start, warm-up and measurement: a step variant, a repeat, a target and a tool.
type Run struct {
	ID       string // stable and file-name safe: 003-getuser-grpc-protobench-r1
	Index    int    // 1-based position in the plan before --only and --tools filtered it
	Step     string // variant name, e.g. sweep-conn200; record.Record.Step
	BaseStep string // the step's name in the file
	Repeat   int    // 1-based
	Repeats  int

	Target      string
	Protocol    string        // the target's targets.Protocols entry
	Custom      *CustomTarget // the user's own server, nil for a reference target
	Tool        string
	Method      string         // contract method, or "Echo:70,GetUser:30" for a mix
	Mix         map[string]int // nil unless the step is a mix
	Model       string
	Connections int
	Concurrency int     // in flight per connection (closed model)
	Rate        float64 // total requests per second (open model), 0 when closed
	// LoadPercent and CapacityStep: the open model's rate is LoadPercent % of the capacity that
	// CapacityStep measured earlier in the run (the slowest target's); Rate is 0 until the
	// runner resolves it.
	LoadPercent  float64
	CapacityStep string
	PayloadBytes int
	Pattern      string // the client pattern, for a target that has patterns (internal/targets), else empty
	InFlight     int    // requests in flight when the step set in_flight, else 0
	HTTPVersion  string // HTTP targets: HTTP1 or HTTP2; empty for the others
	Encoding     string // HTTP targets: EncodingJSON or EncodingProtobuf; empty for the others
	TLS          bool   // served over TLS with the run's certificates
	// RequestsPerConnection is the step's connection churn: each connection carries that many
	// requests, then closes (0: reused for the whole run).
	RequestsPerConnection int
	// Compression is the step's compression, none or gzip: the server's (the runner hands a
	// reference server targets.CompressionEnv) and the tool's.
	Compression string

	Warmup   time.Duration
	Duration time.Duration
	Cooldown time.Duration

	Knobs  map[string]string // server knobs by scenario name, canonical values
	Env    map[string]string // the knobs as the server's own environment variables
	Caps   Caps              // resolved: no zero fields
	Layout Layout
}

// Plan is the ordered list of runs for one invocation, and how long it should take.
type Plan struct {
	Scenario *Scenario
	Options  PlanOptions
	Layout   Layout
	Runs     []Run
	Notes    []string // adjustments worth telling the user (clamped caps, shared cores)
	// Headline is the name of the step the answer leads with (Scenario.HeadlineStep), which
	// runs first; "" when no step compares two targets.
	Headline      string
	TotalDuration time.Duration // estimate, StartOverhead included
}

// Plan expands the scenario into runs. Runs are ordered step by step; within a step, each
// repeat runs every variant, target and tool before the next repeat starts, so slow drift of the
// host (thermal, noisy neighbours, a VM's CPU cost moving over minutes) spreads over all the
// cells a step compares instead of biasing the last ones.
func (s *Scenario) Plan(opts PlanOptions) (*Plan, error) {
	if err := opts.check(); err != nil {
		return nil, err
	}
	only, err := compileFilter(opts.Only)
	if err != nil {
		return nil, err
	}
	layout, err := resolveLayout(s, opts.topology(), opts.ForceLayout)
	if err != nil {
		return nil, err
	}
	p := &Plan{Scenario: s, Options: opts, Layout: layout}
	if layout.Shared {
		p.note("server and load tools share cpuset %s: results include their contention", layout.ServerCPUSet)
	}
	if len(layout.Flags) > 0 {
		p.note("CPU layout: %s; every record is flagged %s", layout.Reason, strings.Join(layout.Flags, ", "))
	}
	if h := s.HeadlineStep(); h >= 0 {
		p.Headline = s.Steps[h].Name
	}
	b := &planBuilder{plan: p, only: only}
	for _, i := range s.stepOrder() {
		if err := b.addStep(i); err != nil {
			return nil, err
		}
	}
	if !b.matched {
		return nil, fmt.Errorf("--only %q matches no step; steps are %s", opts.Only, strings.Join(s.variantNames(), ", "))
	}
	if len(p.Runs) == 0 {
		return nil, fmt.Errorf("--tools %s leaves no run in the selected steps", strings.Join(opts.Tools, ","))
	}
	for _, r := range p.Runs {
		p.TotalDuration += StartOverhead + r.Warmup + r.Duration + r.Cooldown
	}
	return p, nil
}

// check refuses options no scenario could satisfy, before the plan is built.
func (opts PlanOptions) check() error {
	if opts.Repeat < 0 || opts.Repeat > maxRepeats {
		return fmt.Errorf("--repeat: expected 1 to %d, got %d", maxRepeats, opts.Repeat)
	}
	for _, t := range opts.Tools {
		if !contains(Tools, t) {
			return fmt.Errorf("--tools: unknown tool %q; expected one of %s", t, strings.Join(Tools, ", "))
		}
	}
	return nil
}

// topology is the CPU topology the layout places on: the given one, or Cores (this machine's
// CPUs when 0) as flat cores.
func (opts PlanOptions) topology() *cputopo.Topology {
	if opts.Topology != nil {
		return opts.Topology
	}
	cores := opts.Cores
	if cores <= 0 {
		cores = runtime.NumCPU()
	}
	return cputopo.Flat(cores, "")
}

// planBuilder appends a scenario's runs to a plan step by step. index counts every run the
// scenario has, filtered or not, so a run keeps its ID whatever --only and --tools select.
type planBuilder struct {
	plan    *Plan
	only    func(string) bool
	index   int
	matched bool // some step or variant matched --only
}

// addStep adds the runs of step i, repeat by repeat, each repeat shuffled on its own.
func (b *planBuilder) addStep(i int) error {
	s, opts := b.plan.Scenario, b.plan.Options
	st := &s.Steps[i]
	timing := s.Defaults
	st.Timing.apply(&timing)
	timing = adjustTiming(timing, opts)
	variants := st.Variants()
	for rep := 1; rep <= timing.Repeats; rep++ {
		first := len(b.plan.Runs)
		for _, v := range variants {
			if err := b.addVariant(st, v, rep, timing); err != nil {
				return err
			}
		}
		shuffleRepeat(b.plan.Runs[first:], opts.Seed, i, rep)
	}
	return nil
}

// addVariant adds one repeat of a variant: a run for every target and tool pair that can run
// it.
func (b *planBuilder) addVariant(st *Step, v Variant, rep int, timing Timing) error {
	s, opts := b.plan.Scenario, b.plan.Options
	keep := b.only(v.Name) || b.only(st.Name)
	b.matched = b.matched || keep
	for _, target := range v.Targets {
		t, _ := s.Target(target)
		if !v.appliesTo(t) {
			continue
		}
		for _, tool := range v.Tools {
			if ok, _ := s.compatible(tool, target); !ok {
				continue
			}
			if ok, _ := transportCompatible(tool, t, v.HTTPVersion, v.Encoding); !ok {
				continue
			}
			b.index++
			if b.index > maxRuns {
				return fmt.Errorf("%s: the plan has more than %d runs; shrink the matrices or repeats", s.Path, maxRuns)
			}
			if !keep || (len(opts.Tools) > 0 && !contains(opts.Tools, tool)) {
				continue
			}
			b.plan.Runs = append(b.plan.Runs, b.plan.makeRun(b.index, st, v, rep, timing, target, tool))
		}
	}
	return nil
}

// shuffleRepeat puts one repeat's runs of a step in a random order drawn from the seed, the
// step's position and the repeat. A fixed order (gRPC always before REST) would hand any trend
// within a repeat (the host warming up, a neighbour starting) to the same target every time,
// and a paired ratio would inherit it; shuffled, the trend becomes noise that the pairs' interval
// counts. Run IDs keep their plan index, so they do not depend on the order.
func shuffleRepeat(runs []Run, seed uint64, step, rep int) {
	if seed == 0 || len(runs) < 2 {
		return
	}
	rng := rand.New(rand.NewPCG(seed, uint64(step)<<32|uint64(rep)))
	rng.Shuffle(len(runs), func(i, j int) { runs[i], runs[j] = runs[j], runs[i] })
}

func (p *Plan) makeRun(index int, st *Step, v Variant, rep int, timing Timing, target, tool string) Run {
	sc := p.Scenario
	t, _ := sc.Target(target)
	r := Run{
		Protocol: t.Protocol, Custom: sc.Custom[target],
		Index: index, Step: v.nameFor(t), BaseStep: st.Name, Repeat: rep, Repeats: timing.Repeats,
		Target: target, Tool: tool, Method: st.Method, Model: st.Model,
		Connections: v.Connections, Concurrency: v.Concurrency, Rate: v.Rate, PayloadBytes: v.PayloadBytes,
		Warmup: timing.Warmup, Duration: timing.Duration, Cooldown: timing.Cooldown,
		Layout: p.Layout, TLS: v.TLS, RequestsPerConnection: v.RequestsPerConnection,
	}
	if st.RateFrom != nil {
		r.LoadPercent, r.CapacityStep = v.LoadPercent, st.RateFrom.Step
	}
	if len(st.Mix) > 0 {
		r.Mix = make(map[string]int, len(st.Mix))
		for k, w := range st.Mix {
			r.Mix[k] = w
		}
	}
	r.Pattern = patternFor(sc, st, t)
	if t.IsHTTP() {
		r.HTTPVersion, r.Encoding = v.HTTPVersion, v.Encoding
		// The target's own defaults: the first it lists (REST: HTTP/1.1 and JSON; Connect:
		// HTTP/1.1 and protobuf).
		if r.HTTPVersion == "" {
			r.HTTPVersion = HTTP1
			if len(t.HTTPVersions) > 0 {
				r.HTTPVersion = t.HTTPVersions[0]
			}
		}
		if r.Encoding == "" {
			r.Encoding = EncodingJSON
			if len(t.Encodings) > 0 {
				r.Encoding = t.Encodings[0]
			}
		}
	}
	if v.InFlight > 0 {
		// validateTransport already refused variants whose topology does not resolve.
		r.InFlight = v.InFlight
		r.Connections, r.Concurrency, _ = v.topology(t, r.Pattern)
	}
	r.ID = fmt.Sprintf("%03d-%s-%s-%s-r%d", index, r.Step, target, tool, rep)
	// The server's knobs only: a client knob (the pattern) is already in the run's own fields.
	r.Knobs = map[string]string{}
	r.Env = map[string]string{}
	for k, val := range knobsFor(sc, st, target) {
		if env, v, ok := KnobEnv(t, k, val); ok {
			r.Knobs[k], r.Env[env] = val, v
		}
	}
	r.Compression = v.Compression
	if r.Compression == "" {
		r.Compression = CompressionNone
	}
	r.Caps = p.capsFor(st, target)
	return r
}

// capsFor resolves a run's caps. The step beats the scenario; within one level a per-target
// server entry beats the shared caps. CPU quotas above the cpuset size are clamped, with a
// note, so a scenario written for a big machine still runs on a laptop.
func (p *Plan) capsFor(st *Step, target string) Caps {
	sc := p.Scenario
	first := func(fs ...float64) float64 {
		for _, f := range fs {
			if f > 0 {
				return f
			}
		}
		return 0
	}
	firstInt := func(xs ...int64) int64 {
		for _, x := range xs {
			if x > 0 {
				return x
			}
		}
		return 0
	}
	serverCores := float64(cpuCount(p.Layout.ServerCPUSet))
	clientCores := float64(cpuCount(p.Layout.ClientCPUSet))
	c := Caps{
		ServerCPUs:        first(st.Servers[target].CPUs, st.Caps.ServerCPUs, sc.Servers[target].CPUs, sc.Caps.ServerCPUs, serverCores),
		ServerMemoryBytes: firstInt(st.Servers[target].MemoryBytes, st.Caps.ServerMemoryBytes, sc.Servers[target].MemoryBytes, sc.Caps.ServerMemoryBytes, defaultServerMemory(sc, target)),
		ClientCPUs:        first(st.Caps.ClientCPUs, sc.Caps.ClientCPUs, clientCores),
		ClientMemoryBytes: firstInt(st.Caps.ClientMemoryBytes, sc.Caps.ClientMemoryBytes, DefaultClientMemoryBytes),
	}
	if c.ServerCPUs > serverCores {
		p.note("%s server cap %s cpus lowered to %s: server cpuset %s has %s cores", target, formatFloat(c.ServerCPUs), formatFloat(serverCores), p.Layout.ServerCPUSet, formatFloat(serverCores))
		c.ServerCPUs = serverCores
	}
	if c.ClientCPUs > clientCores {
		p.note("client cap %s cpus lowered to %s: client cpuset %s has %s cores", formatFloat(c.ClientCPUs), formatFloat(clientCores), p.Layout.ClientCPUSet, formatFloat(clientCores))
		c.ClientCPUs = clientCores
	}
	return c
}

func (p *Plan) note(format string, args ...any) {
	n := fmt.Sprintf(format, args...)
	if !contains(p.Notes, n) {
		p.Notes = append(p.Notes, n)
	}
}

// adjustTiming applies --quick and --repeat to a step's timing.
func adjustTiming(t Timing, opts PlanOptions) Timing {
	if opts.Quick {
		t.Repeats = 1
		if t.Warmup+t.Duration > QuickBudget {
			t.Warmup = min(t.Warmup, QuickWarmup)
			t.Duration = min(t.Duration, QuickBudget-t.Warmup)
		}
		t.Cooldown = min(t.Cooldown, QuickCooldown)
	}
	if opts.Repeat > 0 {
		t.Repeats = opts.Repeat
	}
	return t
}

// compileFilter turns --only into a predicate on step names. Patterns with *, ? or [ are globs
// matched against the whole name; others match as substrings. An empty filter keeps every step.
func compileFilter(only string) (func(string) bool, error) {
	var pats []string
	for _, p := range strings.Split(only, ",") {
		if p = strings.TrimSpace(p); p != "" {
			pats = append(pats, p)
		}
	}
	if len(pats) == 0 {
		return func(string) bool { return true }, nil
	}
	for _, p := range pats {
		if _, err := path.Match(p, ""); err != nil {
			return nil, fmt.Errorf("--only: bad pattern %q: %v", p, err)
		}
	}
	return func(name string) bool {
		for _, p := range pats {
			if strings.ContainsAny(p, "*?[") {
				if ok, _ := path.Match(p, name); ok {
					return true
				}
			} else if strings.Contains(name, p) {
				return true
			}
		}
		return false
	}, nil
}

// variantNames lists every step and variant name, for --only errors.
func (s *Scenario) variantNames() []string {
	var names []string
	for i := range s.Steps {
		st := &s.Steps[i]
		names = append(names, st.Name)
		if st.Matrix != nil {
			for _, v := range st.Variants() {
				names = append(names, v.Name)
			}
		}
	}
	return names
}

// StepNames lists the variant names of the plan in run order, each once.
func (p *Plan) StepNames() []string {
	var names []string
	seen := map[string]bool{}
	for _, r := range p.Runs {
		if !seen[r.Step] {
			seen[r.Step] = true
			names = append(names, r.Step)
		}
	}
	return names
}

// RunByID finds a run by its ID, e.g. to resume after the last finished one.
func (p *Plan) RunByID(id string) (Run, bool) {
	for _, r := range p.Runs {
		if r.ID == id {
			return r, true
		}
	}
	return Run{}, false
}

// Variant returns the expanded step named name and the step it came from.
func (s *Scenario) Variant(name string) (Variant, bool) {
	for i := range s.Steps {
		st := &s.Steps[i]
		if st.Matrix == nil && st.Name != name {
			continue
		}
		for _, v := range st.Variants() {
			if v.Name == name {
				return v, true
			}
		}
	}
	return Variant{}, false
}

// defaultServerMemory is the target's own default memory cap from the registry.
func defaultServerMemory(sc *Scenario, target string) int64 {
	if t, ok := sc.Target(target); ok && t.Caps.MemoryBytes > 0 {
		return t.Caps.MemoryBytes
	}
	return DefaultServerMemoryBytes
}
