package loadgen

import (
	"testing"
	"time"

	hdr "github.com/HdrHistogram/hdrhistogram-go"
)

func TestHistogramMerge(t *testing.T) {
	tests := []struct {
		name  string
		parts [][]time.Duration
	}{
		{"two workers, disjoint ranges", [][]time.Duration{{time.Millisecond, 2 * time.Millisecond}, {time.Second, 3 * time.Second}}},
		{"one empty worker", [][]time.Duration{{}, {50 * time.Microsecond, 70 * time.Microsecond, 90 * time.Microsecond}}},
		{"many workers", [][]time.Duration{{time.Millisecond}, {time.Millisecond}, {10 * time.Millisecond}, {100 * time.Millisecond}, {time.Second}}},
		{"beyond the range is clamped, not dropped", [][]time.Duration{{2 * time.Minute}, {time.Millisecond}}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			all := NewHistogram()
			var parts []*hdr.Histogram
			for _, vals := range tc.parts {
				h := NewHistogram()
				for _, v := range vals {
					recordDuration(h, v)
					recordDuration(all, v)
				}
				parts = append(parts, h)
			}
			merged := MergeHistograms(parts)
			if merged.TotalCount() != all.TotalCount() {
				t.Fatalf("merged count %d, want %d", merged.TotalCount(), all.TotalCount())
			}
			for _, p := range []float64{0, 50, 90, 99, 99.9, 100} {
				if got, want := merged.ValueAtPercentile(p), all.ValueAtPercentile(p); got != want {
					t.Errorf("p%g = %d, want %d", p, got, want)
				}
			}
			if !merged.Equals(all) {
				t.Error("merged histogram differs from the one that recorded everything")
			}
			dec, err := DecodeHistogram(EncodeHistogram(merged))
			if err != nil {
				t.Fatalf("decode: %v", err)
			}
			if dec.TotalCount() != merged.TotalCount() || dec.Max() != merged.Max() {
				t.Errorf("decoded histogram: count %d max %d, want %d %d", dec.TotalCount(), dec.Max(), merged.TotalCount(), merged.Max())
			}
		})
	}
}

func TestSummaryAndSpectrum(t *testing.T) {
	h := NewHistogram()
	for i := 1; i <= 1000; i++ {
		recordDuration(h, time.Duration(i)*time.Millisecond)
	}
	s := Summary(h)
	checks := []struct {
		name      string
		got, want float64
	}{
		{"p50", s.P50, 500},
		{"p90", s.P90, 900},
		{"p99", s.P99, 990},
		{"max", s.Max, 1000},
		{"mean", s.Mean, 500.5},
	}
	for _, c := range checks {
		// 3 significant digits: within 0.1 %.
		if c.got < c.want*0.999 || c.got > c.want*1.001 {
			t.Errorf("%s = %g ms, want %g ms", c.name, c.got, c.want)
		}
	}
	sp := Spectrum(h)
	if len(sp) < 20 || sp[len(sp)-1].Percentile != 100 || sp[len(sp)-1].TotalCount != 1000 {
		t.Errorf("spectrum has %d points ending at %+v, want a wrk2-style spectrum ending at 100%% with 1000", len(sp), sp[len(sp)-1])
	}
}
