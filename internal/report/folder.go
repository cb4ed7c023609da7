package report

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"time"

	"github.com/protobench/protobench/internal/hostinfo"
	"github.com/protobench/protobench/internal/hostspeed"

	"github.com/protobench/protobench/internal/record"
	"github.com/protobench/protobench/internal/results"
	"github.com/protobench/protobench/internal/scenario"
)

// RunInfo is the part of run.json the reports show. It mirrors the runner's RunInfo by JSON
// name rather than importing it, because the runner calls this package at the end of a run.
type RunInfo struct {
	RunID          string        `json:"run_id"`
	Scenario       string        `json:"scenario"`
	ScenarioSHA256 string        `json:"scenario_sha256"`
	Command        []string      `json:"command"`
	Quick          bool          `json:"quick"`
	Started        time.Time     `json:"started"`
	Finished       *time.Time    `json:"finished,omitempty"`
	Host           hostinfo.Host `json:"host"`
	ComposeVersion string        `json:"compose_version"`
	Images         []struct {
		Name    string `json:"name"`
		Ref     string `json:"ref"`
		ID      string `json:"id"`
		Source  string `json:"source"`
		Variant string `json:"variant"`
		Note    string `json:"note"`
	} `json:"images"`
	Layout        scenario.Layout `json:"cpu_layout"`
	Notes         []string        `json:"notes"`
	PrometheusURL string          `json:"prometheus_url"`
	GrafanaURL    string          `json:"grafana_url"`
	PlanFlags     *struct {
		Quick  bool     `json:"quick"`
		Repeat int      `json:"repeat"`
		Only   string   `json:"only"`
		Tools  []string `json:"tools"`
		Seed   uint64   `json:"seed"`
	} `json:"plan_flags"`
	HostSpeed *hostspeed.Record `json:"host_speed"`
}

// Folder is one results folder read back: what every report and comparison starts from.
type Folder struct {
	Dir     string
	Run     RunInfo
	Records []record.Record
	// Plan is rebuilt from scenario.yaml with run.json's options; nil when the scenario file is
	// missing or no longer parses, in which case the charts work from the records alone.
	Plan     *scenario.Plan
	PlanErr  error
	Summary  *results.Summary
	RawFiles []string // every file under raw/, relative to Dir, sorted
	// PerRun holds what raw/ says about each record beyond its summary, by record index.
	PerRun []RunDetail
}

// RunDetail is what the raw files add to one record: per-second figures and the latency spectrum.
type RunDetail struct {
	Seconds     []Second   // empty when the tool recorded none
	Spectrum    []Quantile // empty when the tool recorded none
	SecondsFrom string     // raw file the per-second figures came from
}

// Second is one second of a run as the load generator recorded it.
type Second struct {
	T             float64 // end of the interval, seconds since the measured window began
	Warmup        bool    // before the measured window (T ≤ 0)
	ThroughputRPS float64
	P50Ms, P99Ms  float64
	Errors        int64
}

// Quantile is one point of a latency spectrum: the percentile (0–100) and its latency.
type Quantile struct {
	Percentile float64
	ValueMs    float64
}

// Load reads a results folder. run.json and results.json must exist; everything else is
// optional, because an interrupted run leaves a folder that is still worth a report.
func Load(dir string) (*Folder, error) {
	f := &Folder{Dir: dir}
	runPath := filepath.Join(dir, results.RunFile)
	data, err := os.ReadFile(runPath)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("report: %s is not a results folder: it has no %s", dir, results.RunFile)
	}
	if err != nil {
		return nil, fmt.Errorf("report: %w", err)
	}
	if err := json.Unmarshal(data, &f.Run); err != nil {
		return nil, fmt.Errorf("report: %s: %w", runPath, err)
	}
	f.Records, err = results.Load(dir)
	if err != nil {
		if !errors.Is(err, fs.ErrNotExist) {
			return nil, fmt.Errorf("report: %w", err)
		}
		// A run interrupted before its first measurement still gets a report that says so.
		f.Records = nil
	}
	f.Plan, f.PlanErr = plan(dir, f.Run)
	f.Summary = results.Summarize(f.Plan, f.Records)
	f.RawFiles = rawFiles(dir)
	f.PerRun = make([]RunDetail, len(f.Records))
	for i, r := range f.Records {
		f.PerRun[i] = readDetail(dir, r)
	}
	return f, nil
}

// plan rebuilds the plan the run used, as `protobench report` does, so the summary groups and
// the published figures come out the same as in summary.md.
func plan(dir string, run RunInfo) (*scenario.Plan, error) {
	sc, err := scenario.Load(filepath.Join(dir, results.ScenarioFile))
	if err != nil {
		return nil, err
	}
	cores := run.Layout.Cores
	if cores <= 0 {
		cores = run.Host.Cores
	}
	// The topology the run placed on; a layout it kept with --force-layout is kept again.
	opts := scenario.PlanOptions{Quick: run.Quick, Cores: cores, Topology: run.Layout.Topology, ForceLayout: true}
	if pf := run.PlanFlags; pf != nil {
		// The same repeats and order as the run had; --only and --tools are left out so that
		// records of earlier partial runs in the folder still find their steps.
		opts.Repeat, opts.Seed = pf.Repeat, pf.Seed
	}
	return sc.Plan(opts)
}

func rawFiles(dir string) []string {
	var out []string
	root := filepath.Join(dir, "raw")
	_ = filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return nil
		}
		if rel, err := filepath.Rel(dir, path); err == nil {
			out = append(out, filepath.ToSlash(rel))
		}
		return nil
	})
	sort.Strings(out)
	return out
}

// rawResult is the part of our generator's result file the report reads: "latency_spectrum",
// and "series" from versions that kept the per-second figures there.
type rawResult struct {
	Series []struct {
		T             float64 `json:"t_s"`
		ThroughputRPS float64 `json:"throughput_rps"`
		P50Ms         float64 `json:"p50_ms"`
		P99Ms         float64 `json:"p99_ms"`
		Errors        int64   `json:"errors"`
	} `json:"series"`
	Spectrum []struct {
		Percentile float64 `json:"percentile"`
		ValueMs    float64 `json:"value_ms"`
	} `json:"latency_spectrum"`
}

// readDetail looks through a record's raw files for per-second figures and a spectrum: the
// load generator's timeline (raw/<run>.timeseries.json, record.Timeseries) first, else the
// "series" of its result file. Files that hold neither (a tool's stdout, another tool's JSON)
// are skipped, not errors. For a step several generators shared, the merged files come before
// the parts' own (raw/<run>.part<k>.*), which would show one part's share of the load.
func readDetail(dir string, r record.Record) RunDetail {
	var d RunDetail
	names := wholeFirst(r.RawFiles)
	for _, name := range names {
		if !strings.HasSuffix(name, ".timeseries.json") || strings.Contains(filepath.Base(name), ".warmup") {
			continue
		}
		file, err := os.Open(filepath.Join(dir, filepath.FromSlash(name)))
		if err != nil {
			continue
		}
		ts, err := record.DecodeTimeseries(file)
		file.Close()
		if err != nil || len(ts.Points) == 0 {
			continue
		}
		for _, p := range ts.Points {
			d.Seconds = append(d.Seconds, Second{T: p.TS, Warmup: p.Warmup, ThroughputRPS: p.ThroughputRPS,
				P50Ms: p.LatencyMs.P50, P99Ms: p.LatencyMs.P99, Errors: p.Errors})
		}
		d.SecondsFrom = name
		break
	}
	for _, name := range names {
		if !strings.HasSuffix(name, ".json") || strings.HasSuffix(name, ".timeseries.json") || strings.Contains(filepath.Base(name), ".warmup") {
			continue
		}
		data, err := os.ReadFile(filepath.Join(dir, filepath.FromSlash(name)))
		if err != nil {
			continue
		}
		var raw rawResult
		if json.Unmarshal(data, &raw) != nil {
			continue
		}
		if len(d.Seconds) == 0 && len(raw.Series) > 0 {
			for _, s := range raw.Series {
				d.Seconds = append(d.Seconds, Second{T: s.T, ThroughputRPS: s.ThroughputRPS, P50Ms: s.P50Ms, P99Ms: s.P99Ms, Errors: s.Errors})
			}
			d.SecondsFrom = name
		}
		if len(d.Spectrum) == 0 && len(raw.Spectrum) > 0 {
			for _, q := range raw.Spectrum {
				d.Spectrum = append(d.Spectrum, Quantile{Percentile: q.Percentile, ValueMs: q.ValueMs})
			}
		}
	}
	return d
}

// partFile matches the base name of a part's file of a step several generators shared
// (tool.PartPrefix: <run>.part<k>.json, <run>.part<k>.timeseries.json).
var partFile = regexp.MustCompile(`\.part[0-9]+\.`)

// wholeFirst is names with the parts' files moved after the others, each group in its order.
func wholeFirst(names []string) []string {
	out := append([]string{}, names...)
	sort.SliceStable(out, func(i, j int) bool {
		return !partFile.MatchString(filepath.Base(out[i])) && partFile.MatchString(filepath.Base(out[j]))
	})
	return out
}

// Measured is the run's seconds inside the measured window, warm-up left out.
func (d RunDetail) Measured() []Second {
	var out []Second
	for _, s := range d.Seconds {
		if !s.Warmup {
			out = append(out, s)
		}
	}
	return out
}
