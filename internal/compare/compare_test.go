package compare

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/protobench/protobench/internal/record"
	"github.com/protobench/protobench/internal/report/browsertest"
	"github.com/protobench/protobench/internal/report/reporttest"
	"github.com/protobench/protobench/internal/results"
)

// TestVerdicts: rows with at least MinRepeats a side get a verdict, the others none and a reason;
// a folder against an A/A twin (the same code, its jitter in another phase) gets no verdict at
// all, and a 30 % faster one is faster on every judged row.
func TestVerdicts(t *testing.T) {
	base := reporttest.Folder(t, reporttest.Options{Jitter: 0.02})
	fast := reporttest.Folder(t, reporttest.Options{Jitter: 0.02, Speed: 1.3, Phase: 2})
	twin := reporttest.Folder(t, reporttest.Options{Jitter: 0.02, Phase: 1})
	same := reporttest.Folder(t, reporttest.Options{Jitter: 0.02})
	cases := []struct {
		name     string
		dirs     []string
		rps, p99 string // verdict every row with enough repeats must get
	}{
		{"faster", []string{base, fast}, Faster, Faster},
		{"slower", []string{fast, base}, Slower, Slower},
		{"A/A twin", []string{base, twin}, NoDifference, NoDifference},
		{"same folder", []string{base, same}, NoDifference, NoDifference},
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
			judged := 0
			for _, r := range cmp.Rows {
				if r.Base.N < MinRepeats || r.Other.N < MinRepeats {
					if r.Throughput.Verdict != NoVerdict || !strings.Contains(r.Throughput.Why, "at least 3 a side") {
						t.Errorf("%s %s %s: n=%d/%d got %q (%s)", r.Step, r.Target, r.Tool, r.Base.N, r.Other.N, r.Throughput.Verdict, r.Throughput.Why)
					}
					continue
				}
				judged++
				if r.Throughput.Verdict != c.rps || r.P99.Verdict != c.p99 {
					t.Errorf("%s %s: req/s %s (ratio %.3f, %+v, adj p %.3g), p99 %s; want %s and %s",
						r.Step, r.Target, r.Throughput.Verdict, r.Throughput.Ratio, r.Throughput.CI, r.Throughput.Adjusted, r.P99.Verdict, c.rps, c.p99)
				}
				if !strings.Contains(r.Throughput.CI.Label(), "moderated t on logs, 95.0 % at n=3+3") {
					t.Errorf("%s %s: interval label %q", r.Step, r.Target, r.Throughput.CI.Label())
				}
			}
			if judged == 0 {
				t.Error("no row had enough repeats to judge")
			}
		})
	}
	// Quick folders have one repeat a side: no verdict anywhere, and never from seconds.
	cmp, err := Compare([]string{reporttest.Folder(t, reporttest.Options{Quick: true}), reporttest.Folder(t, reporttest.Options{Quick: true, Speed: 1.3})}, false)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range cmp.Rows {
		if r.Throughput.Verdict != NoVerdict || r.P99.Verdict != NoVerdict {
			t.Errorf("one repeat, %s %s %s: verdicts %q / %q", r.Step, r.Target, r.Tool, r.Throughput.Verdict, r.P99.Verdict)
		}
	}
}

// TestSettingsRefused: repeats, quick mode and images that differ are refused with the
// differences listed, and --force records and prints them.
func TestSettingsRefused(t *testing.T) {
	a := reporttest.Folder(t, reporttest.Options{Jitter: 0.02})
	cases := []struct {
		name  string
		opts  reporttest.Options
		wants []string
	}{
		{"repeats", reporttest.Options{Jitter: 0.02, Repeat: 5}, []string{"repeats of getuser: A 3, B 5"}},
		{"quick", reporttest.Options{Quick: true}, []string{"quick mode: A false, B true", "repeats of getuser: A 3, B 1"}},
		{"image", reporttest.Options{Jitter: 0.02, ImageID: "sha256:ffff"}, []string{"image protobench: A sha256:0123456789ab, B sha256:ffff"}},
	}
	for _, c := range cases {
		b := reporttest.Folder(t, c.opts)
		_, err := Compare([]string{a, b}, false)
		if err == nil || !strings.Contains(err.Error(), "--force") {
			t.Fatalf("%s: err = %v, want a refusal naming --force", c.name, err)
		}
		for _, w := range c.wants {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("%s: refusal lacks %q:\n%v", c.name, w, err)
			}
		}
		cmp, err := Compare([]string{a, b}, true)
		if err != nil {
			t.Fatalf("%s with --force: %v", c.name, err)
		}
		var md bytes.Buffer
		if err := cmp.Markdown(&md); err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(md.String(), "although the settings differ") || !strings.Contains(md.String(), c.wants[0]) {
			t.Errorf("%s: markdown does not list the differences:\n%s", c.name, md.String())
		}
	}
}

// TestHostDrift: a 30 % faster folder whose host ran 40 % slower at the end of the other run gets
// no verdict (the change is within the drift); with a steady host it is faster.
func TestHostDrift(t *testing.T) {
	a := reporttest.Folder(t, reporttest.Options{Jitter: 0.02, HostSpeed: 100})
	drifting := reporttest.Folder(t, reporttest.Options{Jitter: 0.02, Speed: 1.3, Phase: 2, HostSpeed: 100, HostSpeedEnd: 60})
	steady := reporttest.Folder(t, reporttest.Options{Jitter: 0.02, Speed: 1.3, Phase: 2, HostSpeed: 101})
	for _, c := range []struct {
		dir, verdict, why string
	}{{drifting, NoVerdict, "within the host's own drift"}, {steady, Faster, ""}} {
		cmp, err := Compare([]string{a, c.dir}, false)
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range cmp.Rows {
			if r.Base.N < MinRepeats {
				continue
			}
			if r.Throughput.Verdict != c.verdict || !strings.Contains(r.Throughput.Why, c.why) {
				t.Errorf("%s %s: %q (%s), want %q", r.Step, r.Target, r.Throughput.Verdict, r.Throughput.Why, c.verdict)
			}
		}
		var md bytes.Buffer
		_ = cmp.Markdown(&md)
		if !strings.Contains(md.String(), "host speed index (start → end) server cores 100.0 → 100.0") {
			t.Errorf("markdown does not show the host speed index:\n%s", md.String())
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
// no row gets a verdict (the seconds of one run are not repeats), and each says why.
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
		if r.Throughput.Verdict != NoVerdict || r.P99.Verdict != NoVerdict || r.Throughput.Why == "" {
			t.Errorf("%s %s %s: verdicts %s / %s (%s) with one repeat", r.Step, r.Target, r.Tool, r.Throughput.Verdict, r.P99.Verdict, r.Throughput.Why)
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

// TestBusyHostWarning: a folder with a run beside another process's load (busy-host) makes
// compare warn, naming the folder; folders of quiet runs do not.
func TestBusyHostWarning(t *testing.T) {
	quiet := reporttest.Folder(t, reporttest.Options{Jitter: 0.02})
	busy := reporttest.Folder(t, reporttest.Options{Jitter: 0.02, Speed: 0.7})
	recs, err := results.Load(busy)
	if err != nil {
		t.Fatal(err)
	}
	others := 35.0
	recs[0].ClientCores = &record.CoreTime{IdlePercent: 10, OthersPercent: &others}
	results.ApplyFlags(recs)
	var b bytes.Buffer
	if err := results.WriteJSON(&b, recs); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(busy, "results.json"), b.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	cmp, err := Compare([]string{quiet, quiet}, false)
	if err != nil || len(cmp.Warnings) != 0 {
		t.Fatalf("quiet folders: warnings %v (%v)", cmp.Warnings, err)
	}
	for _, dirs := range [][]string{{quiet, busy}, {busy, quiet}} {
		var out, errOut bytes.Buffer
		if code := Command(context.Background(), append([]string{"--out", filepath.Join(t.TempDir(), "c.html")}, dirs...), &out, &errOut); code != 0 {
			t.Fatalf("compare %v: exit %d: %s", dirs, code, errOut.String())
		}
		for what, text := range map[string]string{"stderr": errOut.String(), "markdown": out.String()} {
			if !strings.Contains(text, busy) || !strings.Contains(text, "1 of") || !strings.Contains(text, "busy-host") {
				t.Errorf("compare %v: %s does not warn about %s:\n%s", dirs, what, busy, text)
			}
		}
	}
}
