package e2e

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/protobench/protobench/internal/record"
)

// answerFirst is written with the headline pair after two explaining steps (a matrix and a
// single target, neither of which the answer leads with), so the test sees the plan move it
// first.
const answerFirst = `description: the answer first, then the explaining steps
defaults: {warmup: 1s, duration: 2s, repeats: 1, cooldown: 0s}
steps:
  - name: explain
    targets: [grpc]
    tools: [protobench]
    method: Echo
    payload_bytes: 64
    concurrency: 1
    matrix: {connections: [1, 2]}
  - name: explain-netrpc
    targets: [netrpc]
    tools: [protobench]
    method: Echo
    payload_bytes: 64
    connections: 2
    concurrency: 1
  - name: pair
    targets: [grpc, rest]
    tools: [protobench]
    method: GetUser
    connections: 2
    concurrency: 1
    baseline: rest
    repeats: 2
`

// TestAnswerFirstThenInterrupt: the pre-flight prints its lines, the headline step runs first,
// the terminal prints the answer (the ratio with its interval) and the time the explaining steps
// will take as soon as its repeats are done, and a Ctrl-C after that exits 130 leaving a complete
// folder of what ran: results.json with the headline's runs, summary.md opening with the same
// answer, report.html, and run.json with the layout's reason and the pre-flight. Every record
// carries its clock, or says why not.
func TestAnswerFirstThenInterrupt(t *testing.T) {
	e := newFaultEnv(t)
	p := project(t, "answer")
	sc := e.scenarioFile(t, "answer", answerFirst)
	out := filepath.Join(e.work, "out")

	r := e.start(t, nil, "run", sc, "--out", out, "--project", p)
	r.waitOutput("protobench: Answer: throughput grpc / rest in pair: ", 15*time.Minute)
	r.waitOutput("Ctrl-C now stops them", time.Minute)
	r.signal(syscall.SIGINT)
	if code := r.wait(3 * time.Minute); code != 130 {
		t.Fatalf("exit status after SIGINT = %d, want 130:\n%s", code, r.out.String())
	}
	assertNoContainers(t, p)
	text := r.out.String()
	for _, want := range []string{"protobench: pre-flight", "layout:", "power:", "load:", "disk:", "docker:", "the explaining steps (3 runs) take about"} {
		if !strings.Contains(text, want) {
			t.Errorf("the terminal lacks %q:\n%s", want, text)
		}
	}
	if p, x := strings.Index(text, "] pair "), strings.Index(text, "] explain"); p < 0 || x >= 0 && x < p {
		t.Errorf("the headline step did not run first:\n%s", text)
	}

	dir := resultsDir(t, out)
	for _, f := range []string{"results.json", "summary.md", "report.html", "run.json"} {
		if _, err := os.Stat(filepath.Join(dir, f)); err != nil {
			t.Errorf("the interrupted folder lacks %s: %v", f, err)
		}
	}
	recs := loadRecords(t, dir)
	pairs := 0
	for _, rec := range recs {
		if rec.Step == "pair" && rec.Valid() {
			pairs++
		}
		checkClock(t, rec)
	}
	if pairs != 4 {
		t.Errorf("%d valid runs of the headline step in results.json, want 4", pairs)
	}
	summary, _ := os.ReadFile(filepath.Join(dir, "summary.md"))
	if !strings.Contains(string(summary), "## The answer") || !strings.Contains(string(summary), "**Throughput, grpc / rest**") {
		t.Errorf("summary.md does not open with the answer:\n%s", summary)
	}
	var info struct {
		Layout struct {
			Reason string
		} `json:"cpu_layout"`
		Preflight []string `json:"preflight"`
	}
	b, _ := os.ReadFile(filepath.Join(dir, "run.json"))
	if err := json.Unmarshal(b, &info); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(info.Layout.Reason, "physical cores") || len(info.Preflight) < 5 {
		t.Errorf("run.json: layout reason %q, pre-flight %q", info.Layout.Reason, info.Preflight)
	}
}

// checkClock: a valid record has its cores' clock, or a note that says what is not available;
// never a zero figure.
func checkClock(t *testing.T, rec record.Record) {
	t.Helper()
	if !rec.Valid() {
		return
	}
	c := rec.Clock
	if c == nil {
		t.Errorf("%s: no clock", key(rec))
		return
	}
	for side, f := range map[string]*record.Frequency{"server": c.Server, "client": c.Client} {
		switch {
		case f == nil && !strings.Contains(c.Note, side+"'s clock not available"):
			t.Errorf("%s: no %s clock and no note why: %+v", key(rec), side, c)
		case f != nil && (f.Min <= 0 || f.Max < f.Min):
			t.Errorf("%s: %s clock %+v", key(rec), side, f)
		}
	}
	if (c.Governor == "") != strings.Contains(c.Note, "governor not available") {
		t.Errorf("%s: governor %q, note %q", key(rec), c.Governor, c.Note)
	}
}
