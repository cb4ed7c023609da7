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

// TestRankNeighbours: on values 1..n the rank for p99 is round(0.99·n), and the neighbours are
// the values one rank either side; they bound the percentile of two parts merged, which a
// bound on the parts' own percentiles does not.
func TestRankNeighbours(t *testing.T) {
	h := NewHistogram()
	for v := int64(1); v <= 1000; v++ {
		_ = h.RecordValue(v)
	}
	if lo, hi := RankNeighbours(h, 99); lo != 989 || hi != 991 || h.ValueAtPercentile(99) != 990 {
		t.Errorf("p99 of 1..1000: neighbours %d and %d around %d, want 989 and 991 around 990", lo, hi, h.ValueAtPercentile(99))
	}
	if lo, hi := RankNeighbours(h, 100); lo != 999 || hi != 1000 {
		t.Errorf("max of 1..1000: neighbours %d and %d, want 999 and 1000", lo, hi)
	}
	if lo, hi := RankNeighbours(NewHistogram(), 99); lo != 0 || hi != 0 {
		t.Errorf("empty histogram: %d and %d", lo, hi)
	}

	// The case CI met: 1172 and 1567 values whose p99 ranks (1160 and 1551) sum to one short of
	// the merged rank (2712). With both parts' tails above their p99, the merged p99 is the
	// first value of a tail: above both parts' p99, within their neighbours.
	a, b, all := NewHistogram(), NewHistogram(), NewHistogram()
	add := func(h *hdr.Histogram, body, tail int) {
		for i := range body + tail {
			v := int64(100)
			if i >= body {
				v = int64(1000 + 10*(i-body))
			}
			_ = h.RecordValue(v)
			_ = all.RecordValue(v)
		}
	}
	add(a, 1160, 12)
	add(b, 1551, 16)
	m := all.ValueAtPercentile(99)
	loA, hiA := RankNeighbours(a, 99)
	loB, hiB := RankNeighbours(b, 99)
	if own := max(a.ValueAtPercentile(99), b.ValueAtPercentile(99)); m <= own {
		t.Errorf("merged p99 %d not above the parts' own p99s (at most %d): the case does not show the rounding", m, own)
	}
	if m < min(loA, loB) || m > max(hiA, hiB) {
		t.Errorf("merged p99 %d outside the parts' neighbours [%d, %d]", m, min(loA, loB), max(hiA, hiB))
	}
}
