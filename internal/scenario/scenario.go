// Package scenario reads protobench scenario files (YAML, snake_case keys) into a validated
// Scenario and expands one into an ordered Plan of runs. Every problem in a file is reported as
// "file:line: field: what was expected" before anything starts, because a benchmark that fails
// on its last step after an hour is worse than one that refuses to start.
package scenario

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"regexp"
	"strconv"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"
)

// Built-in timing used where a scenario's defaults block leaves a value out.
const (
	DefaultWarmup   = 5 * time.Second
	DefaultDuration = 30 * time.Second
	DefaultRepeats  = 3
	DefaultCooldown = 2 * time.Second
)

// Default memory caps when a scenario gives none.
const (
	DefaultServerMemoryBytes = 1 << 30
	DefaultClientMemoryBytes = 1 << 30
)

// Limits that keep a typo from planning a week-long run.
const (
	maxRepeats     = 100
	maxConnections = 100000
	maxConcurrency = 100000
	maxRate        = 1e8
	maxVariants    = 1000 // matrix combinations per step
	maxRuns        = 10000
)

// Scenario is one validated scenario file.
type Scenario struct {
	Name        string
	Description string
	Source      string // seed file the scenario reproduces, e.g. 003_4bb7b5b759b6729f.txt
	Published   *Published
	Caps        Caps                     // caps for every server and tool; zero fields mean automatic
	Layout      LayoutSpec               // cpuset overrides; empty fields mean automatic
	Servers     map[string]Server        // per-target caps and knobs
	Custom      map[string]*CustomTarget // the user's own servers, by target name
	Defaults    Timing                   // resolved: built-in values fill what the file leaves out
	Steps       []Step

	Path string // file the scenario was read from
	Raw  []byte // the file's bytes, hashed into run.json and copied into the results folder
}

// Timing is how long each run of a step lasts and how often it repeats.
type Timing struct {
	Warmup   time.Duration // discarded load before the measurement
	Duration time.Duration // measured window
	Repeats  int
	Cooldown time.Duration // idle time after a run, so the next one starts on a quiet machine
}

// TimingOverride holds the timing fields a step sets; nil means "inherit the defaults".
type TimingOverride struct {
	Warmup, Duration, Cooldown *time.Duration
	Repeats                    *int
}

// Caps are CPU quotas (in cores) and memory limits. Zero means automatic: the server gets its
// whole cpuset, the client its whole cpuset, and memory the package defaults.
type Caps struct {
	ServerCPUs        float64
	ServerMemoryBytes int64
	ClientCPUs        float64
	ClientMemoryBytes int64
}

// LayoutSpec overrides the automatic CPU layout; an empty field keeps the automatic cpuset.
type LayoutSpec struct {
	ServerCPUSet        string
	ClientCPUSet        string
	ObservabilityCPUSet string
	lines               map[string]int // line of each key's value, for errors found when planning
}

// Server holds what one target gets beyond the shared caps: its own caps and its knobs.
type Server struct {
	CPUs        float64 // 0: inherit
	MemoryBytes int64   // 0: inherit
	// Knobs holds canonical string values; KnobEnv says how a server knob reaches the server, and
	// a client knob (the pattern) reaches the tool through the Run.
	Knobs     map[string]string
	knobLines map[string]int // line of each knob's value, for errors found after decoding
}

// Step is one workload as written in the file, before matrix expansion.
type Step struct {
	Name        string
	Description string
	Line        int

	Targets []string
	Tools   []string // default: protobench
	Method  string   // contract method, or the canonical mix string when Mix is set
	Mix     map[string]int
	Model   string // closed (default) or open

	Connections int
	Concurrency int     // in-flight requests per connection
	Rate        float64 // total requests per second, open model only
	// RateFrom sets the open model's rates from the capacity an earlier step measured in the
	// same run (latency at equal load); it excludes Rate and matrix.rate.
	RateFrom     *RateFrom
	PayloadBytes int
	// InFlight is the requests in flight; each target spreads them by its own topology
	// (see Variant.topology). Excludes Concurrency.
	InFlight    int
	HTTPVersion string // HTTP targets only: HTTP1 (default) or HTTP2
	Encoding    string // HTTP targets only: EncodingJSON (default) or EncodingProtobuf
	// TLS serves the step over TLS with the run's certificates (internal/tlscert).
	TLS bool
	// RequestsPerConnection closes each connection after that many requests and opens a new
	// one (connection churn); 0, written forever, reuses connections for the whole run.
	RequestsPerConnection int
	// Compression is none (the default) or gzip (compression.go).
	Compression string

	Timing  TimingOverride
	Caps    Caps
	Servers map[string]Server
	Matrix  *Matrix

	Baseline  string  // target that ratios divide by; default the first target
	KneeP99Ms float64 // when > 0, the summary reports the highest throughput with p99 below it

	pos map[string]int // line of each field, for errors found after decoding
}

// RateFrom derives a step's open-model rates from an earlier closed-loop step of the same run:
// each Percent of the capacity of the slowest of that step's targets (the median throughput of
// its repeats), so that every target is held at the same offered loads.
type RateFrom struct {
	Step    string
	Percent []float64
	Line    int
}

// Matrix expands a step over lists of values: one variant per combination.
type Matrix struct {
	Connections  []int
	Concurrency  []int
	PayloadBytes []int
	Rate         []float64
	InFlight     []int
	HTTPVersion  []string
	Encoding     []string
	Targets      []string // the same as listing them on the step; for one-place matrices
	Tools        []string
	TLS          []bool
	// RequestsPerConnection holds 0 for forever.
	RequestsPerConnection []int
	Compression           []string
	Line                  int
}

// Load reads and validates the scenario file at path.
func Load(path string) (*Scenario, error) {
	data, err := readFile(path)
	if err != nil {
		return nil, err
	}
	sc, err := Parse(path, data)
	if err != nil {
		return nil, err
	}
	return sc, nil
}

// Hash is the SHA-256 of the file's bytes in hex: the same file always gives the same hash,
// so run.json can say exactly which scenario produced a result.
func (s *Scenario) Hash() string {
	sum := sha256.Sum256(s.Raw)
	return hex.EncodeToString(sum[:])
}

// Step returns the step named name (before expansion).
func (s *Scenario) Step(name string) (*Step, bool) {
	for i := range s.Steps {
		if s.Steps[i].Name == name {
			return &s.Steps[i], true
		}
	}
	return nil, false
}

var syntaxLine = regexp.MustCompile(`line (\d+)`)

// Parse validates data as the scenario file named file (used only in error messages).
func Parse(file string, data []byte) (*Scenario, error) {
	if err := checkSize(file, data); err != nil {
		return nil, err
	}
	d := &decoder{collector: collector{file: file}}
	root, err := parseYAML(data)
	if err != nil {
		if errors.Is(err, io.EOF) {
			d.add(1, "scenario", "empty file; expected a mapping with name, description and steps")
		} else {
			var multi *extraDocError
			if errors.As(err, &multi) {
				d.add(multi.line, "yaml", "more than one YAML document; a scenario file holds exactly one")
			} else {
				d.add(yamlErrLine(err), "yaml", "%s", strings.TrimPrefix(err.Error(), "yaml: "))
			}
		}
		return nil, d.err()
	}
	sc := &Scenario{Path: file, Raw: data, Servers: map[string]Server{}, Custom: map[string]*CustomTarget{}}
	d.decodeScenario(root, sc)
	if err := d.err(); err != nil {
		return nil, err
	}
	validate(d, sc)
	if err := d.err(); err != nil {
		return nil, err
	}
	return sc, nil
}

// extraDocError reports a second YAML document, which would otherwise be silently ignored.
type extraDocError struct{ line int }

// Error implements error.
func (e *extraDocError) Error() string { return "more than one YAML document" }

// parseYAML reads exactly one YAML document into a node tree. yaml.v3 has panicked on hostile
// input in the past; a scenario file is user input, so a library bug must surface as an error,
// never as a crash of the runner. The recover covers only the library: our own decoding must not
// panic, and the fuzz test would not see it if it were recovered here.
func parseYAML(data []byte) (root *yaml.Node, err error) {
	defer func() {
		if r := recover(); r != nil {
			root, err = nil, fmt.Errorf("yaml: cannot parse: %v", r)
		}
	}()
	dec := yaml.NewDecoder(bytes.NewReader(data))
	var doc yaml.Node
	if err := dec.Decode(&doc); err != nil {
		return nil, err
	}
	var extra yaml.Node
	if err := dec.Decode(&extra); !errors.Is(err, io.EOF) {
		line := extra.Line
		if err != nil {
			line = yamlErrLine(err)
		}
		return nil, &extraDocError{line: line}
	}
	root = &doc
	if root.Kind == yaml.DocumentNode && len(root.Content) > 0 {
		root = root.Content[0]
	}
	return root, nil
}

func yamlErrLine(err error) int {
	if m := syntaxLine.FindStringSubmatch(err.Error()); m != nil {
		if n, convErr := strconv.Atoi(m[1]); convErr == nil {
			return n
		}
	}
	return 1
}
