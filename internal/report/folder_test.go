package report

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/protobench/protobench/internal/record"
)

// TestReadDetailPrefersTheMergedFiles: a step two generators shared keeps each part's timeline
// and result beside the merged ones, and raw/<run>.part1.timeseries.json sorts before
// raw/<run>.timeseries.json; the report must show the whole step's seconds and spectrum, not
// part 1's.
func TestReadDetailPrefersTheMergedFiles(t *testing.T) {
	dir := t.TempDir()
	if err := os.Mkdir(filepath.Join(dir, "raw"), 0o755); err != nil {
		t.Fatal(err)
	}
	write := func(name string, v any) {
		t.Helper()
		b, err := json.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, "raw", name), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	timeline := func(rps float64) record.Timeseries {
		return record.Timeseries{Version: record.TimeseriesVersion, Tool: "protobench", IntervalS: 1,
			Points: []record.TimeseriesPoint{{TS: 1, SpanS: 1, Requests: int64(rps), ThroughputRPS: rps}}}
	}
	spectrum := func(ms float64) map[string]any {
		return map[string]any{"tool": "protobench", "latency_spectrum": []map[string]float64{{"percentile": 50, "value_ms": ms}}}
	}
	write("run.part1.timeseries.json", timeline(100))
	write("run.part2.timeseries.json", timeline(200))
	write("run.timeseries.json", timeline(300))
	write("run.part1.json", spectrum(1))
	write("run.part2.json", spectrum(2))
	write("run.json", spectrum(3))
	// As the runner lists them (collectFiles: sorted).
	r := record.Record{RawFiles: []string{"raw/run.json", "raw/run.part1.json", "raw/run.part1.timeseries.json",
		"raw/run.part2.json", "raw/run.part2.timeseries.json", "raw/run.timeseries.json"}}
	d := readDetail(dir, r)
	if d.SecondsFrom != "raw/run.timeseries.json" || len(d.Seconds) != 1 || d.Seconds[0].ThroughputRPS != 300 {
		t.Errorf("seconds from %s: %+v; want the merged timeline's 300 req/s", d.SecondsFrom, d.Seconds)
	}
	if len(d.Spectrum) != 1 || d.Spectrum[0].ValueMs != 3 {
		t.Errorf("spectrum %+v, want the merged result's", d.Spectrum)
	}
	// A run of one generator is read as before.
	one := readDetail(dir, record.Record{RawFiles: []string{"raw/run.part2.json", "raw/run.part2.timeseries.json"}})
	if one.SecondsFrom != "raw/run.part2.timeseries.json" || one.Spectrum[0].ValueMs != 2 {
		t.Errorf("only a part's files: %+v", one)
	}
}
