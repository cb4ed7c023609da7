package loadgen

import (
	"math"
	"time"

	hdr "github.com/HdrHistogram/hdrhistogram-go"

	"github.com/protobench/protobench/internal/record"
)

// Histogram range: 1 µs to 60 s at 3 significant digits, in microseconds. Anything slower than
// 60 s is recorded as 60 s rather than dropped, so the count stays right and the max says
// "at least a minute".
const (
	histLowestMicros  = 1
	histHighestMicros = 60_000_000
	histSigFigs       = 3
	// seriesSigFigs is the precision of the one-second interval histograms behind the per-second
	// series and the live metrics: two digits are plenty for a p99 plotted per second and keep
	// them small enough to swap every second.
	seriesSigFigs = 2
)

// NewHistogram returns an empty latency histogram in microseconds with the engine's range.
func NewHistogram() *hdr.Histogram {
	return hdr.New(histLowestMicros, histHighestMicros, histSigFigs)
}

func newSeriesHistogram() *hdr.Histogram {
	return hdr.New(histLowestMicros, histHighestMicros, seriesSigFigs)
}

// recordDuration records d in microseconds, clamped to the histogram's range.
func recordDuration(h *hdr.Histogram, d time.Duration) {
	us := d.Microseconds()
	if us < 0 {
		us = 0
	} else if us > histHighestMicros {
		us = histHighestMicros
	}
	_ = h.RecordValue(us) // cannot fail inside the range
}

// MergeHistograms adds every histogram in parts into a new one. It is how per-worker histograms
// become the run's histogram; merging is exact because all share the same bucket layout.
func MergeHistograms(parts []*hdr.Histogram) *hdr.Histogram {
	out := NewHistogram()
	for _, p := range parts {
		if p != nil {
			out.Merge(p)
		}
	}
	return out
}

// RankNeighbours returns the values, in microseconds, one rank below and one rank above the
// rank HdrHistogram takes for pct (round(pct/100·n)). Other estimators rank a percentile
// differently (Prometheus takes pct/100·n; the percentile of parts merged sums ranks each rounded
// on its own), so their figure for the same values is to be compared with this range, not with
// one value: in a sparse tail, one rank can move p99 by several per cent.
func RankNeighbours(h *hdr.Histogram, pct float64) (below, above int64) {
	n := float64(h.TotalCount())
	if n == 0 {
		return 0, 0
	}
	at := func(p float64) int64 { return h.ValueAtPercentile(max(0, min(100, p))) }
	return at(pct - 100/n), at(pct + 100/n)
}

// Summary turns a histogram in microseconds into the record's latency block in milliseconds.
func Summary(h *hdr.Histogram) record.Latency {
	if h.TotalCount() == 0 {
		return record.Latency{}
	}
	vals := h.ValueAtPercentilesSlice([]float64{50, 90, 99, 99.9})
	return record.Latency{
		Mean: round3(h.Mean() / 1000),
		P50:  ms(vals[0]),
		P90:  ms(vals[1]),
		P99:  ms(vals[2]),
		P999: ms(vals[3]),
		Max:  ms(h.Max()),
	}
}

// SpectrumPoint is one line of a wrk2-style percentile spectrum.
type SpectrumPoint struct {
	Percentile float64 `json:"percentile"`
	ValueMs    float64 `json:"value_ms"`
	TotalCount int64   `json:"total_count"`
}

// Spectrum is the percentile spectrum at wrk2's resolution (5 ticks per halving of the distance
// to 100 %), so the tail is shown in more detail than the body.
func Spectrum(h *hdr.Histogram) []SpectrumPoint {
	if h.TotalCount() == 0 {
		return nil
	}
	var out []SpectrumPoint
	for _, b := range h.CumulativeDistributionWithTicks(5) {
		out = append(out, SpectrumPoint{Percentile: b.Quantile, ValueMs: ms(b.ValueAt), TotalCount: b.Count})
	}
	return out
}

// EncodeHistogram is the histogram in HdrHistogram's standard compressed V2 encoding (base64):
// the full histogram in one string that any HdrHistogram implementation can decode.
func EncodeHistogram(h *hdr.Histogram) string {
	b, err := h.Encode(hdr.V2CompressedEncodingCookieBase)
	if err != nil {
		return ""
	}
	return string(b)
}

// DecodeHistogram reverses EncodeHistogram.
func DecodeHistogram(s string) (*hdr.Histogram, error) {
	return hdr.Decode([]byte(s))
}

func ms(us int64) float64 { return round3(float64(us) / 1000) }

// round3 keeps microsecond resolution in millisecond figures without float noise in the JSON.
func round3(x float64) float64 { return math.Round(x*1000) / 1000 }
