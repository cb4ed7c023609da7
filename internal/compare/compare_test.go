package compare

import (
	"bytes"
	"context"
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/protobench/protobench/internal/record"
	"github.com/protobench/protobench/internal/report/browsertest"
	"github.com/protobench/protobench/internal/report/reporttest"
	"github.com/protobench/protobench/internal/results"
	"github.com/protobench/protobench/internal/stats"
)

// TestVerdicts: rows with at least MinRepeats a side get a verdict, the others none and a reason;
// a folder against an A/A twin (the same code, its jitter in another phase) gets no verdict at
// all, and a 30 % faster one is faster on every judged row.
func TestVerdicts(t *testing.T) {
	f := func(o reporttest.Options) string { return reporttest.Folder(t, o) }
	base := []string{f(reporttest.Options{Jitter: 0.02}), f(reporttest.Options{Jitter: 0.02, Phase: 1})}
	fast := []string{f(reporttest.Options{Jitter: 0.02, Speed: 1.3, Phase: 2}), f(reporttest.Options{Jitter: 0.02, Speed: 1.3, Phase: 3})}
	twin := []string{f(reporttest.Options{Jitter: 0.02, Phase: 4}), f(reporttest.Options{Jitter: 0.02, Phase: 5})}
	cases := []struct {
		name  string
		sides [][]string
		want  []string // verdicts a tested change may get
	}{
		{"faster", [][]string{base, fast}, []string{Faster}},
		{"slower", [][]string{fast, base}, []string{Slower}},
		{"A/A twins", [][]string{base, twin}, []string{NoDifference, Inconclusive}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			cmp, err := CompareSides(c.sides, Options{})
			if err != nil {
				t.Fatal(err)
			}
			if want := len(cmp.Folders[0].Summary.Groups); len(cmp.Rows) != want || want == 0 {
				t.Errorf("%d rows, want %d", len(cmp.Rows), want)
			}
			judged := 0
			for _, r := range cmp.Rows {
				for m, ch := range []Change{r.Throughput, r.P99} {
					if ok, _ := inFamily(r, m); !ok {
						if ch.Verdict != NotTested {
							t.Errorf("%s %s metric %d out of the family: %q", r.Step, r.Target, m, ch.Verdict)
						}
						continue
					}
					judged++
					if !slices.Contains(c.want, ch.Verdict) {
						t.Errorf("%s %s metric %d: %s (ratio %.3f, %+v, adj p %.3g, %s); want one of %v",
							r.Step, r.Target, m, ch.Verdict, ch.Ratio, ch.CI, ch.Adjusted, ch.Why, c.want)
					}
					if !strings.Contains(ch.CI.Label(), "t on logs, 95.0 % at n=2+2") {
						t.Errorf("%s %s: interval label %q", r.Step, r.Target, ch.CI.Label())
					}
					if ch.Verdict == NoDifference || ch.Verdict == Inconclusive {
						if !strings.Contains(verdictText(ch), "could find") {
							t.Errorf("%s %s: %q says nothing of what it could find", r.Step, r.Target, verdictText(ch))
						}
					}
				}
			}
			if judged == 0 {
				t.Error("no change was tested")
			}
		})
	}
	// One folder a side: no verdict on any tested change, each with its MDE and the way to a verdict.
	cmp, err := Compare([]string{base[0], fast[0]}, false)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range cmp.Rows {
		for m, ch := range []Change{r.Throughput, r.P99} {
			if ok, _ := inFamily(r, m); !ok {
				continue
			}
			if ch.Verdict != NoVerdict || !strings.Contains(ch.Why, "one run a side") || !strings.Contains(ch.Why, "in one step") {
				t.Errorf("one folder a side, %s %s metric %d: %q (%s)", r.Step, r.Target, m, ch.Verdict, ch.Why)
			}
			if m == 0 && (math.IsNaN(ch.MDE) || !strings.Contains(ch.Why, "the smallest change two runs show")) {
				t.Errorf("one folder a side, %s %s: no MDE (%s)", r.Step, r.Target, ch.Why)
			}
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
	a2 := reporttest.Folder(t, reporttest.Options{Jitter: 0.02, Phase: 1, HostSpeed: 100})
	drifting := reporttest.Folder(t, reporttest.Options{Jitter: 0.02, Speed: 1.3, Phase: 2, HostSpeed: 100, HostSpeedEnd: 60})
	steady := reporttest.Folder(t, reporttest.Options{Jitter: 0.02, Speed: 1.3, Phase: 2, HostSpeed: 101})
	steady2 := reporttest.Folder(t, reporttest.Options{Jitter: 0.02, Speed: 1.3, Phase: 3, HostSpeed: 100})
	for _, c := range []struct {
		dir, verdict, why string
	}{{drifting, NoVerdict, "within the host's own drift"}, {steady, Faster, ""}} {
		cmp, err := CompareSides([][]string{{a, a2}, {c.dir, steady2}}, Options{})
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range cmp.Rows {
			if r.Model == "open" {
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
		if (r.Throughput.Verdict != NoVerdict && r.Throughput.Verdict != NotTested) || (r.P99.Verdict != NoVerdict && r.P99.Verdict != NotTested) || r.Throughput.Why == "" {
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

// TestCommandSidesAndFlags: "A1 A2 vs B1 B2" makes two sides of two folders, and bad --effect,
// --power, --calibration and a lone "vs" are refused naming the flag or the word.
func TestCommandSidesAndFlags(t *testing.T) {
	a1 := reporttest.Folder(t, reporttest.Options{Jitter: 0.02})
	a2 := reporttest.Folder(t, reporttest.Options{Jitter: 0.02, Phase: 1})
	b1 := reporttest.Folder(t, reporttest.Options{Jitter: 0.02, Phase: 2})
	b2 := reporttest.Folder(t, reporttest.Options{Jitter: 0.02, Phase: 3})
	var out, errOut bytes.Buffer
	html := filepath.Join(t.TempDir(), "c.html")
	if code := Command(context.Background(), []string{"--out", html, "--effect", "10%", a1, a2, "vs", b1, b2}, &out, &errOut); code != 0 {
		t.Fatalf("exit %d: %s", code, errOut.String())
	}
	if !strings.Contains(out.String(), "A+B") || !strings.Contains(out.String(), "C+D") || !strings.Contains(out.String(), "2 / 2 folders") {
		t.Errorf("markdown does not show two sides of two folders:\n%s", out.String())
	}
	bad := filepath.Join(t.TempDir(), "cal.json")
	os.WriteFile(bad, []byte(`{"throughput": {"df": 3, "var": -1}}`), 0o644)
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--effect", "lots", a1, b1}, "--effect"},
		{[]string{"--power", "80", a1, b1}, "--power"},
		{[]string{"--calibration", bad, a1, b1}, "--calibration"},
		{[]string{a1, "vs"}, `"vs" needs folders on both sides`},
	} {
		errOut.Reset()
		if code := Command(context.Background(), c.args, &out, &errOut); code != 2 || !strings.Contains(errOut.String(), c.want) {
			t.Errorf("%v: exit %d, %q; want 2 naming %s", c.args, code, errOut.String(), c.want)
		}
	}
}

// TestCalibrationRoundTrip: the file bench-aa writes (a Calibration as JSON) is what
// --calibration reads.
func TestCalibrationRoundTrip(t *testing.T) {
	want := Calibration{Throughput: stats.Prior{DF: 19, Var: 0.0004}, P99: stats.Prior{DF: 19, Var: 0.003}, Source: "bench-aa: 20 A/A runs"}
	data, _ := json.Marshal(want)
	p := filepath.Join(t.TempDir(), "calibration.json")
	os.WriteFile(p, data, 0o644)
	got, err := LoadCalibration(p)
	if err != nil || got != want {
		t.Fatalf("got %+v (%v), want %+v", got, err, want)
	}
}
