package report

import (
	"html"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/protobench/protobench/internal/report/browsertest"
	"github.com/protobench/protobench/internal/report/reporttest"
)

func TestWriteInBrowser(t *testing.T) {
	cases := []struct {
		name string
		opts reporttest.Options
	}{
		{"complete", reporttest.Options{Jitter: 0.03}},
		{"interrupted", reporttest.Options{Jitter: 0.03, Interrupted: true}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dir := reporttest.Folder(t, c.opts)
			if err := Write(dir); err != nil {
				t.Fatal(err)
			}
			path := filepath.Join(dir, File)
			checkSelfContained(t, path)
			page, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			// Every run of our generator has its seconds (from the timeline file or, for second
			// repeats, the result file); only the wrk run has none.
			if n := strings.Count(string(page), "no per-second data for this run"); n != 1 {
				t.Errorf("%d runs without per-second data, want 1 (the wrk run)", n)
			}
			// A sweep of requests in flight is drawn over in flight, even where it moves
			// connections for one target and streams for another.
			for _, title := range []string{"inflight: throughput by requests in flight", "grid: throughput"} {
				if !strings.Contains(string(page), `aria-label="`+title+`"`) {
					t.Errorf("no chart %q", title)
				}
			}
			// How the server's cores spent the window, medians over the repeats.
			for _, cores := range []string{"84 / 4 / 10 / 2", "40 / 25 / 35 / 0"} {
				if !strings.Contains(string(page), "<td class=\"n\">"+cores+"</td>") {
					t.Errorf("no server core time %q in the step tables", cores)
				}
			}
			for _, id := range []string{"step-getuser", "step-sweep", "step-sweep-conn16", "step-inflight", "step-grid", "cpu", "published", "flags", "raw"} {
				if !strings.Contains(string(page), `id="`+id+`"`) {
					t.Errorf("no element with id %q", id)
				}
			}
			res := browsertest.Check(t, path, "report-"+c.name)
			for _, b := range res.SVGs {
				t.Logf("%5.1f %% ink, %4.1f %% colour  %s", 100*b.Ink, 100*b.Colour, b.Label)
			}
		})
	}
}

// checkSelfContained fails on anything that would need a script or the network.
func checkSelfContained(t *testing.T, path string) {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	page := string(data)
	if strings.Contains(strings.ToLower(page), "<script") {
		t.Errorf("%s holds a <script>; the report must need no JavaScript", path)
	}
	for _, m := range regexp.MustCompile(`(?:href|src)="([^"]*)"`).FindAllStringSubmatch(page, -1) {
		if strings.Contains(m[1], "://") || strings.HasPrefix(m[1], "//") {
			t.Errorf("%s links outside the results folder: %s", path, m[1])
		}
	}
}

// TestSummaryLinks follows every step row of summary.md to report.html's section, and to
// Grafana over the step's window when the run had Grafana.
func TestSummaryLinks(t *testing.T) {
	for _, grafana := range []string{"", "http://127.0.0.1:3000"} {
		dir := reporttest.Folder(t, reporttest.Options{GrafanaURL: grafana})
		if err := Write(dir); err != nil {
			t.Fatal(err)
		}
		summary, err := os.ReadFile(filepath.Join(dir, "summary.md"))
		if err != nil {
			t.Fatal(err)
		}
		page, err := os.ReadFile(filepath.Join(dir, File))
		if err != nil {
			t.Fatal(err)
		}
		f, err := Load(dir)
		if err != nil {
			t.Fatal(err)
		}
		rows := 0
		for _, line := range strings.Split(string(summary), "\n") {
			m := regexp.MustCompile(`\[report\]\(report\.html#([^)]+)\)`).FindStringSubmatch(line)
			if m == nil {
				continue
			}
			rows++
			if !strings.Contains(string(page), `id="`+m[1]+`"`) {
				t.Errorf("summary links to #%s, which report.html lacks", m[1])
			}
			g := regexp.MustCompile(`\[Grafana\]\(([^)]+)\)`).FindStringSubmatch(line)
			if (g != nil) != (grafana != "") {
				t.Errorf("Grafana link %v with grafana_url %q: %s", g, grafana, line)
				continue
			}
			if g == nil {
				continue
			}
			step := strings.TrimPrefix(m[1], "step-")
			u, err := url.Parse(g[1])
			if err != nil {
				t.Fatal(err)
			}
			from, _ := strconv.ParseFloat(u.Query().Get("from"), 64)
			to, _ := strconv.ParseFloat(u.Query().Get("to"), 64)
			for _, r := range f.Records {
				if r.Step == step && r.Target == u.Query().Get("var-target") && (r.StartUnix*1000 < from || r.EndUnix*1000 > to) {
					t.Errorf("Grafana link window %.0f–%.0f ms misses %s %s repeat %d (%.0f–%.0f)", from, to, r.Step, r.Target, r.Repeat, r.StartUnix*1000, r.EndUnix*1000)
				}
			}
			for _, want := range []string{grafana + "/d/protobench-overview/", "var-step=" + step + "&", "var-run_id=" + f.Run.RunID, "var-target=", "var-tool=", "from=", "to="} {
				if !strings.Contains(g[1], want) {
					t.Errorf("Grafana link %s lacks %q", g[1], want)
				}
			}
		}
		if rows != len(f.Summary.Groups) {
			t.Errorf("grafana %q: %d step rows link to the report, want %d (one per row)", grafana, rows, len(f.Summary.Groups))
		}
	}
}

// TestRealFolderInBrowser renders a real `run smoke --quick` folder (testdata/smoke-quick) and
// opens it offline in Chromium.
func TestRealFolderInBrowser(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "smoke-quick")
	if err := os.CopyFS(dir, os.DirFS("testdata/smoke-quick")); err != nil {
		t.Fatal(err)
	}
	if err := Write(dir); err != nil {
		t.Fatal(err)
	}
	f, err := Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	page, err := os.ReadFile(filepath.Join(dir, File))
	if err != nil {
		t.Fatal(err)
	}
	// Our generator's runs have their timeline file; the other tools record no seconds.
	others := 0
	for i, r := range f.Records {
		secs := f.PerRun[i].Seconds
		switch {
		case r.Tool == "protobench" && len(secs) == 0:
			t.Errorf("%s %s: no seconds read from %v", r.Step, r.Target, r.RawFiles)
		case r.Tool == "protobench" && !secs[0].Warmup:
			t.Errorf("%s %s: the warm-up second is missing", r.Step, r.Target)
		case r.Tool != "protobench":
			others++
		}
	}
	if n := strings.Count(string(page), "no per-second data for this run"); n != others {
		t.Errorf("%d runs listed without per-second data, want %d (the runs of other tools)", n, others)
	}
	if !strings.Contains(string(page), `aria-label="servers: latency by percentile"`) {
		t.Error("no latency spectrum for the servers step")
	}
	checkSelfContained(t, filepath.Join(dir, File))
	browsertest.Check(t, filepath.Join(dir, File), "report-smoke-quick")
}

// TestWriteBeforeFirstRecord covers a run interrupted before its first measurement: run.json
// exists, results.json does not, and the page says so instead of failing.
func TestWriteBeforeFirstRecord(t *testing.T) {
	dir := reporttest.Folder(t, reporttest.Options{Interrupted: true})
	if err := os.Remove(filepath.Join(dir, "results.json")); err != nil {
		t.Fatal(err)
	}
	if err := Write(dir); err != nil {
		t.Fatal(err)
	}
	page, err := os.ReadFile(filepath.Join(dir, File))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"this run was interrupted", "no measurement was recorded", "No step has a measurement yet"} {
		if !strings.Contains(string(page), want) {
			t.Errorf("page lacks %q", want)
		}
	}
	if err := os.Remove(filepath.Join(dir, "run.json")); err != nil {
		t.Fatal(err)
	}
	if err := Write(dir); err == nil || !strings.Contains(err.Error(), "run.json") {
		t.Errorf("without run.json: err = %v, want one naming run.json", err)
	}
}

// TestFoldersFromEnv opens the report.html that runs left in the folders named by
// PROTOBENCH_REPORT_DIRS (separated by ':'), as they are, and any compare.html beside them:
// the check of a real `./run.sh grpc-vs-rest --quick`. Skipped when the variable is unset.
func TestFoldersFromEnv(t *testing.T) {
	dirs := os.Getenv("PROTOBENCH_REPORT_DIRS")
	if dirs == "" {
		t.Skip("PROTOBENCH_REPORT_DIRS not set")
	}
	for _, dir := range filepath.SplitList(dirs) {
		for _, name := range []string{File, "compare.html"} {
			path := filepath.Join(dir, name)
			if _, err := os.Stat(path); err != nil {
				if name == File {
					t.Errorf("%s: the run left no report: %v", dir, err)
				}
				continue
			}
			checkSelfContained(t, path)
			browsertest.Check(t, path, filepath.Base(dir)+"-"+strings.TrimSuffix(name, ".html"))
		}
	}
}

// TestAnswerFirst: the page opens with the answer (the headline ratio paired and unpaired, each
// with its method, coverage and n; latency at equal load or why there is none; why), and every
// link of the answer leads to an element of the page.
func TestAnswerFirst(t *testing.T) {
	dir := reporttest.Folder(t, reporttest.Options{Jitter: 0.03})
	if err := Write(dir); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(filepath.Join(dir, File))
	if err != nil {
		t.Fatal(err)
	}
	page := string(data)
	answer, run := strings.Index(page, `<section id="answer">`), strings.Index(page, `<section id="run">`)
	if answer < 0 || run < 0 || answer > run {
		t.Fatalf("the answer (at %d) does not come before where it ran (at %d)", answer, run)
	}
	block := html.UnescapeString(page[answer : strings.Index(page[answer:], "</section>")+answer])
	for _, want := range []string{"Throughput, grpc / rest", "paired t on logs, 95.0 % at n=3 pairs", "Welch t on logs, 95.0 % at n=3+3",
		"Latency at equal load", "not in this run", "Why: Server CPU per request"} {
		if !strings.Contains(block, want) {
			t.Errorf("answer lacks %q:\n%s", want, block)
		}
	}
	for _, m := range regexp.MustCompile(`href="#([^"]+)"`).FindAllStringSubmatch(block, -1) {
		if !strings.Contains(page, `id="`+m[1]+`"`) {
			t.Errorf("the answer links to #%s, which the page lacks", m[1])
		}
	}
	if !strings.Contains(page, "[min,max], 75.0 % at n=3") {
		t.Error("the step tables do not say what their intervals are")
	}
}
