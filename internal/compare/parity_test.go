package compare

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/protobench/protobench/internal/record"
	"github.com/protobench/protobench/internal/report/reporttest"
	"github.com/protobench/protobench/internal/results"
)

// TestUnequalWorkHasNoVerdict: a folder whose runs of one step, target and tool gzipped
// against a baseline that did not gets no verdict on that row, which reads unequal-work and
// names compression, for both figures (even closed-loop p99, which is otherwise "not tested");
// every other row is judged as before. Two folders a side: one a side gets no verdicts at all.
func TestUnequalWorkHasNoVerdict(t *testing.T) {
	base1 := reporttest.Folder(t, reporttest.Options{Jitter: 0.02})
	base2 := reporttest.Folder(t, reporttest.Options{Jitter: 0.02, Phase: 1})
	gz1 := reporttest.Folder(t, reporttest.Options{Jitter: 0.02, Speed: 1.3, Phase: 2})
	gz2 := reporttest.Folder(t, reporttest.Options{Jitter: 0.02, Speed: 1.3, Phase: 3})
	var first record.Record
	for _, gz := range []string{gz1, gz2} {
		recs, err := results.Load(gz)
		if err != nil {
			t.Fatal(err)
		}
		first = recs[0]
		for i := range recs {
			if recs[i].Step == first.Step && recs[i].Target == first.Target && recs[i].Tool == first.Tool {
				recs[i].Compression = "gzip"
			}
		}
		var b bytes.Buffer
		if err := results.WriteJSON(&b, recs); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(gz, "results.json"), b.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	cmp, err := CompareSides([][]string{{base1, base2}, {gz1, gz2}}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	unequal, judged := 0, 0
	for _, r := range cmp.Rows {
		if r.Step == first.Step && r.Target == first.Target && r.Tool == first.Tool {
			unequal++
			for _, ch := range []Change{r.Throughput, r.P99} {
				if ch.Verdict != NoVerdict || !strings.HasPrefix(ch.Why, "unequal-work: ") || !strings.Contains(ch.Why, "compression none vs gzip") {
					t.Errorf("%s %s %s: %q (%s), want no verdict for unequal-work naming compression", r.Step, r.Target, r.Tool, ch.Verdict, ch.Why)
				}
			}
			continue
		}
		if r.Unequal != "" {
			t.Errorf("%s %s %s: %s, but both sides did the same work", r.Step, r.Target, r.Tool, r.Unequal)
		}
		if r.Throughput.Verdict == Faster {
			judged++
		}
	}
	if unequal != 1 || judged == 0 {
		t.Fatalf("%d unequal rows (want 1), %d judged faster (want some)", unequal, judged)
	}
}
