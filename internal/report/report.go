// Package report writes report.html into a results folder: one self-contained page (inline SVG
// and CSS, no scripts, nothing fetched) with the run's metadata, a chart for every step, latency
// spectra, per-second timelines, server CPU per request, the published figures beside ours, the
// flags and links to the raw files, so a run can be looked at where no Grafana runs.
package report

import (
	"bytes"
	"fmt"
	"html/template"
	"path/filepath"
	"strings"

	"github.com/protobench/protobench/internal/results"
	"github.com/protobench/protobench/internal/svgchart"
)

// File is the report's name inside a results folder.
const File = "report.html"

// Write reads the results folder dir and replaces dir/report.html atomically. The runner calls
// it at the end of every run, interrupted ones included, and `protobench report` for any folder.
func Write(dir string) error {
	f, err := Load(dir)
	if err != nil {
		return err
	}
	var buf bytes.Buffer
	if err := Render(&buf, f); err != nil {
		return err
	}
	if err := results.WriteFileAtomic(filepath.Join(dir, File), buf.Bytes()); err != nil {
		return fmt.Errorf("report: %w", err)
	}
	return nil
}

// StepID is the HTML id of a step's section (or a matrix variant's row): "step-<name>". The
// summary's links point here.
func StepID(step string) string { return results.StepAnchor(step) }

// Render writes the report page for a loaded folder.
func Render(w *bytes.Buffer, f *Folder) error {
	return pageTemplate.Execute(w, buildPage(f))
}

type kv struct{ Key, Value string }

type figure struct {
	Caption string
	SVG     template.HTML
}

type flagRow struct {
	Flag, Meaning, Where string
	Raised               bool
}

type page struct {
	Title, Description string
	CSS                template.CSS
	Status             string
	Meta               []kv
	Images             []kv
	Notes              []string
	PlanNote           string
	Sections           []stepSection
	EqualLoad          *equalLoadSection
	CPU                template.HTML
	PublishedTitle     string
	PublishedHow       string
	Published          []publishedRow
	Differences        []string
	Flags              []flagRow
	Raw                []string
	Answer             *answerBlock
	Ratios             []ratioRow
	EqualLoadID        string
	NoEqualLoad        string // why the answer's latency line has no table to point to
}

func buildPage(f *Folder) page {
	p := page{CSS: template.CSS(svgchart.CSS + "\n" + PageCSS)}
	name := f.Run.Scenario
	if name == "" && len(f.Records) > 0 {
		name = f.Records[0].Scenario
	}
	p.Title = "protobench: " + name
	if f.Plan != nil {
		p.Description = f.Plan.Scenario.Description
	} else if f.PlanErr != nil {
		p.PlanNote = fmt.Sprintf("The scenario file could not be read back (%v): charts use the records alone, without the published figures.", f.PlanErr)
	}
	p.Status = status(f)
	p.Meta, p.Images = metadata(f)
	p.Notes = f.Run.Notes
	p.Sections = sections(f)
	p.Answer, p.Ratios = answer(f)
	p.EqualLoad = equalLoad(f)
	p.EqualLoadID = results.EqualLoadAnchor
	if p.EqualLoad == nil && p.Answer != nil {
		p.NoEqualLoad = results.NoEqualLoad
	}
	p.CPU = cpuChart(f)
	publishedTable(f, &p)
	p.Flags = flagRows(f)
	p.Raw = f.RawFiles
	return p
}

func status(f *Folder) string {
	planned := 0
	if f.Plan != nil {
		planned = len(f.Plan.Runs)
	}
	var parts []string
	if f.Run.Finished == nil {
		parts = append(parts, "run.json has no finish time: this run was interrupted (or is still going)")
	}
	if planned > 0 && len(f.Records) < planned {
		parts = append(parts, fmt.Sprintf("%d of %d planned runs are recorded", len(f.Records), planned))
	}
	if f.Run.Quick {
		parts = append(parts, "quick mode: runs cut short and one repeat, not for quoting")
	}
	if len(f.Records) == 0 {
		parts = append(parts, "no measurement was recorded")
	}
	return strings.Join(parts, "; ")
}

func metadata(f *Folder) ([]kv, []kv) {
	r := f.Run
	h := r.Host
	commit := h.GitCommit
	if h.GitDirty {
		commit += " (with uncommitted changes)"
	}
	compose := r.ComposeVersion
	if compose == "" {
		compose = h.ComposeVersion
	}
	finished := "—"
	if r.Finished != nil {
		finished = r.Finished.UTC().Format("2006-01-02 15:04:05 UTC")
	}
	meta := []kv{
		{"Run", r.RunID},
		{"Scenario", r.Scenario},
		{"Scenario sha256", r.ScenarioSHA256},
		{"Command", strings.Join(r.Command, " ")},
		{"Started", r.Started.UTC().Format("2006-01-02 15:04:05 UTC")},
		{"Finished", finished},
		{"CPU", fmt.Sprintf("%s, %d cores", h.CPUModel, h.Cores)},
		{"Memory", fmt.Sprintf("%.1f GiB", float64(h.MemoryBytes)/(1<<30))},
		{"OS, kernel", fmt.Sprintf("%s, %s (cgroup v%d)", h.OS, h.Kernel, h.CgroupVersion)},
		{"Docker, Compose", fmt.Sprintf("%s, %s", h.DockerVersion, compose)},
		{"Go (protobench)", h.GoVersion},
		{"Git commit", commit},
		{"CPU layout", fmt.Sprintf("server cpuset %s, client cpuset %s, observability cpuset %s%s", r.Layout.ServerCPUSet, r.Layout.ClientCPUSet, r.Layout.ObservabilityCPUSet, results.StackPlaces(f.Records))},
	}
	var imgs []kv
	for _, im := range r.Images {
		v := im.Source
		if im.ID != "" {
			v += ", " + shortID(im.ID)
		}
		if im.Variant != "" {
			v += ", " + im.Variant
		}
		if im.Note != "" {
			v += ": " + im.Note
		}
		imgs = append(imgs, kv{im.Name, v})
	}
	return meta, imgs
}

func shortID(id string) string {
	id = strings.TrimPrefix(id, "sha256:")
	if len(id) > 12 {
		return id[:12]
	}
	return id
}

func flagRows(f *Folder) []flagRow {
	where := map[string][]string{}
	for _, g := range f.Summary.Groups {
		for _, fc := range g.Flags {
			where[fc.Flag] = append(where[fc.Flag], fmt.Sprintf("%s %s %s ×%d", g.Step, g.Target, g.Tool, fc.Count))
		}
	}
	var out []flagRow
	known := map[string]bool{}
	for _, fl := range results.FlagLegend() {
		known[fl[0]] = true
		out = append(out, flagRow{Flag: fl[0], Meaning: fl[1], Raised: len(where[fl[0]]) > 0, Where: strings.Join(where[fl[0]], "; ")})
	}
	for fl, w := range where {
		if !known[fl] {
			out = append(out, flagRow{Flag: fl, Meaning: "(no legend)", Raised: true, Where: strings.Join(w, "; ")})
		}
	}
	return out
}
