package compare

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/protobench/protobench/internal/report/browsertest"
	"github.com/protobench/protobench/internal/report/reporttest"
)

func TestVerdicts(t *testing.T) {
	base := reporttest.Folder(t, reporttest.Options{Jitter: 0.02})
	fast := reporttest.Folder(t, reporttest.Options{Jitter: 0.02, Speed: 1.3})
	same := reporttest.Folder(t, reporttest.Options{Jitter: 0.02})
	quickBase := reporttest.Folder(t, reporttest.Options{Quick: true})
	quickFast := reporttest.Folder(t, reporttest.Options{Quick: true, Speed: 1.3})
	cases := []struct {
		name       string
		dirs       []string
		rps, p99   string // verdict every primary-tool row must get
		samplesKnd string
	}{
		{"faster", []string{base, fast}, Faster, Faster, samplesRepeat},
		{"slower", []string{fast, base}, Slower, Slower, samplesRepeat},
		{"same", []string{base, same}, NoDifference, NoDifference, samplesRepeat},
		{"one repeat, per-second samples", []string{quickBase, quickFast}, Faster, Faster, samplesSecond},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			cmp, err := Compare(c.dirs, false)
			if err != nil {
				t.Fatal(err)
			}
			// Both folders ran the same plan: every group of the baseline has its row.
			if want := len(cmp.Folders[0].Summary.Groups); len(cmp.Rows) != want || want == 0 {
				t.Errorf("%d rows, want %d", len(cmp.Rows), want)
			}
			for _, r := range cmp.Rows {
				if r.Tool != "protobench" {
					continue
				}
				if r.Throughput.Verdict != c.rps || r.P99.Verdict != c.p99 {
					t.Errorf("%s %s: req/s %s (ratio %.3f, CI %+v), p99 %s (ratio %.3f, CI %+v); want %s and %s",
						r.Step, r.Target, r.Throughput.Verdict, r.Throughput.Ratio, r.Throughput.CI, r.P99.Verdict, r.P99.Ratio, r.P99.CI, c.rps, c.p99)
				}
				if r.Base.Samples != c.samplesKnd {
					t.Errorf("%s %s: samples %q, want %q", r.Step, r.Target, r.Base.Samples, c.samplesKnd)
				}
			}
		})
	}
	// wrk records no per-second figures: with one repeat there is nothing to judge by.
	cmp, err := Compare([]string{quickBase, quickFast}, false)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range cmp.Rows {
		if r.Tool == "wrk" && (r.Throughput.Verdict != NoVerdict || r.Throughput.Why == "") {
			t.Errorf("wrk with one repeat: verdict %q (%s), want %q with a reason", r.Throughput.Verdict, r.Throughput.Why, NoVerdict)
		}
	}
}

func TestDifferentScenariosRefused(t *testing.T) {
	a := reporttest.Folder(t, reporttest.Options{})
	renamed := strings.Replace(reporttest.Scenario, "name: reporttest", "name: other", 1)
	b := reporttest.Folder(t, reporttest.Options{ScenarioText: renamed})
	edited := strings.Replace(reporttest.Scenario, "repeats: 1\n", "repeats: 2\n", 1)
	c := reporttest.Folder(t, reporttest.Options{ScenarioText: edited})
	for _, other := range []string{b, c} {
		_, err := Compare([]string{a, other}, false)
		if err == nil || !strings.Contains(err.Error(), "different scenarios") || !strings.Contains(err.Error(), "--force") {
			t.Errorf("compare with %s: err = %v, want a refusal naming --force", other, err)
		}
		cmp, err := Compare([]string{a, other}, true)
		if err != nil {
			t.Fatalf("with --force: %v", err)
		}
		if cmp.Mismatch == "" {
			t.Error("with --force: the mismatch is not recorded")
		}
	}
}

func TestCommandInBrowser(t *testing.T) {
	a := reporttest.Folder(t, reporttest.Options{Jitter: 0.02})
	b := reporttest.Folder(t, reporttest.Options{Jitter: 0.02, Speed: 1.3})
	var stdout, stderr bytes.Buffer
	// Flags after the folders, as people type them.
	if code := Command(context.Background(), []string{a, b, "--force"}, &stdout, &stderr); code != 0 {
		t.Fatalf("exit %d: %s", code, stderr.String())
	}
	md := stdout.String()
	for _, want := range []string{"## getuser", "## sweep-conn16", "| grpc | protobench | B |", Faster} {
		if !strings.Contains(md, want) {
			t.Errorf("markdown lacks %q:\n%s", want, md)
		}
	}
	path := filepath.Join(a, File)
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(strings.ToLower(string(data)), "<script") {
		t.Error("compare.html holds a script")
	}
	browsertest.Check(t, path, "compare")

	var none bytes.Buffer
	if code := Command(context.Background(), []string{a}, &none, &none); code != 2 {
		t.Errorf("one folder: exit %d, want 2", code)
	}
}

// TestRealFolders compares two copies of a real `run smoke --quick` folder: one repeat each, so
// our generator's rows are judged on their measured seconds, and a folder against itself shows
// no significant difference; tools without seconds get no verdict and say why.
func TestRealFolders(t *testing.T) {
	var dirs []string
	for _, name := range []string{"a", "b"} {
		d := filepath.Join(t.TempDir(), name)
		if err := os.CopyFS(d, os.DirFS("../report/testdata/smoke-quick")); err != nil {
			t.Fatal(err)
		}
		dirs = append(dirs, d)
	}
	cmp, err := Compare(dirs, false)
	if err != nil {
		t.Fatal(err)
	}
	if len(cmp.Rows) == 0 {
		t.Fatal("no rows")
	}
	for _, r := range cmp.Rows {
		switch {
		case r.Tool == "protobench" && (r.Base.Samples != samplesSecond || r.Throughput.Verdict != NoDifference || r.P99.Verdict != NoDifference):
			t.Errorf("%s %s: samples %s, verdicts %s / %s; want per-second samples and no significant difference", r.Step, r.Target, r.Base.Samples, r.Throughput.Verdict, r.P99.Verdict)
		case r.Tool != "protobench" && r.Throughput.Verdict != NoVerdict:
			t.Errorf("%s %s %s: verdict %s with one repeat and no seconds", r.Step, r.Target, r.Tool, r.Throughput.Verdict)
		}
	}
	var md bytes.Buffer
	if err := cmp.Markdown(&md); err != nil {
		t.Fatal(err)
	}
	for _, step := range []string{"servers", "open", "tools"} {
		if !strings.Contains(md.String(), "## "+step+"\n") {
			t.Errorf("no section for step %s", step)
		}
	}
}
