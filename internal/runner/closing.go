package runner

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/protobench/protobench/internal/scenario"
)

// runTiming is how long a run's loop took against what its plan asked for.
type runTiming struct {
	start, end time.Time
	runs       int
	planned    time.Duration // warm-up + measurement + cool-down of the runs that ran
}

// add counts r; the last run of a plan has no cool-down after it.
func (t *runTiming) add(r scenario.Run, last bool) {
	t.runs++
	t.planned += r.Warmup + r.Duration
	if !last {
		t.planned += r.Cooldown
	}
}

// closingLines names the results folder and the files in it that exist, and says how long the
// runs took against their plan, so the cost of starting and stopping containers is visible.
func closingLines(dir string, t *runTiming) string {
	var b strings.Builder
	fmt.Fprintf(&b, "\nresults: %s\n", dir)
	var files []string
	for _, name := range []string{"report.html", "summary.md", "results.json", "results.csv", "run.json", "scenario.yaml"} {
		if st, err := os.Stat(filepath.Join(dir, name)); err == nil && st.Mode().IsRegular() {
			files = append(files, name)
		}
	}
	if entries, err := os.ReadDir(filepath.Join(dir, "raw")); err == nil {
		files = append(files, fmt.Sprintf("raw/ (%d files)", len(entries)))
	}
	if len(files) > 0 {
		fmt.Fprintf(&b, "  %s\n", strings.Join(files, ", "))
	}
	if t != nil && t.runs > 0 && !t.end.IsZero() {
		took := t.end.Sub(t.start)
		over := (took - t.planned) / time.Duration(t.runs)
		fmt.Fprintf(&b, "time: %d runs took %s against %s of warm-up, measurement and cool-down planned (%.1f s per run to start, check and stop containers)\n",
			t.runs, took.Round(time.Second), t.planned.Round(time.Second), over.Seconds())
	}
	return b.String()
}
