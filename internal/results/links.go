package results

import (
	"encoding/json"
	"fmt"
	"math"
	"net/url"
	"strings"
)

// ReportFile is the HTML report beside summary.md (written by package report).
const ReportFile = "report.html"

// grafanaDashboard is the uid of the overview dashboard that step links open.
const grafanaDashboard = "protobench-overview"

// Links says where the step rows of summary.md point: always to the step's section of
// report.html, and to Grafana over the step's window when the run had Grafana.
type Links struct {
	GrafanaURL string `json:"grafana_url"`
	RunID      string `json:"run_id"`
}

// linksOf reads the link settings from run.json's value (whatever type the caller keeps it in).
func linksOf(run any) Links {
	var l Links
	if run == nil {
		return l
	}
	if data, err := json.Marshal(run); err == nil {
		_ = json.Unmarshal(data, &l)
	}
	l.GrafanaURL = strings.TrimRight(l.GrafanaURL, "/")
	return l
}

// StepAnchor is the id of a step's section (or a matrix variant's row) in report.html.
func StepAnchor(step string) string {
	return "step-" + strings.Map(func(r rune) rune {
		if r == ' ' || r == '#' || r == '"' {
			return '-'
		}
		return r
	}, step)
}

// stepLinks is the Markdown of a step row's Charts cell.
func (l Links) stepLinks(g *Group) string {
	out := fmt.Sprintf("[report](%s#%s)", ReportFile, StepAnchor(g.Step))
	if l.GrafanaURL == "" {
		return out
	}
	start, end := math.Inf(1), math.Inf(-1)
	for _, r := range g.valid {
		if r.StartUnix > 0 && r.EndUnix >= r.StartUnix {
			start, end = math.Min(start, r.StartUnix), math.Max(end, r.EndUnix)
		}
	}
	if math.IsInf(start, 1) {
		return out
	}
	q := url.Values{}
	// A few seconds either side, so the first and last scrapes of the window show.
	q.Set("from", fmt.Sprint(int64((start-5)*1000)))
	q.Set("to", fmt.Sprint(int64((end+5)*1000)))
	if l.RunID != "" {
		q.Set("var-run_id", l.RunID)
	}
	if len(g.valid) > 0 && g.valid[0].Scenario != "" {
		q.Set("var-scenario", g.valid[0].Scenario)
	}
	q.Set("var-step", g.Step)
	q.Set("var-target", g.Target)
	q.Set("var-tool", g.Tool)
	return out + fmt.Sprintf(" · [Grafana](%s/d/%s/?%s)", l.GrafanaURL, grafanaDashboard, q.Encode())
}
