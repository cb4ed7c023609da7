package measure

import (
	"context"
	"fmt"
	"math"
	"sort"
	"strings"
	"time"

	"github.com/protobench/protobench/internal/prom"
	"github.com/protobench/protobench/internal/record"
	"github.com/protobench/protobench/internal/scenario"
)

// encodedMetric is every server's count of requests and replies by content encoding
// (serverkit.Metrics.ObserveEncodings and the Python server's twin).
const encodedMetric = "protobench_server_encoded_messages_total"

// Encodings reads how many requests and replies the server counted in each encoding over
// [start, end], by direction ("request", "reply") and encoding, from the raw counter samples
// around the window (as the containers' CPU). A direction the server does not count is absent.
func (m Prom) Encodings(ctx context.Context, service string, start, end time.Time) (map[string]map[string]float64, error) {
	series, err := m.c.Samples(ctx, fmt.Sprintf(`%s{%s}`, encodedMetric, serverSelector(service)), start.Add(-prom.CounterMargin), end.Add(prom.CounterMargin))
	if err != nil {
		return nil, err
	}
	groups := map[[2]string][]prom.Series{}
	for _, s := range series {
		k := [2]string{s.Labels["direction"], s.Labels["encoding"]}
		groups[k] = append(groups[k], s)
	}
	out := map[string]map[string]float64{}
	for k, ss := range groups {
		v, ok := prom.CounterDelta(ss, start, end)
		if !ok || v <= 0 {
			continue
		}
		if out[k[0]] == nil {
			out[k[0]] = map[string]float64{}
		}
		out[k[0]][k[1]] = v
	}
	return out, nil
}

// addEncodings records the encodings the server counted in each direction over the window, and
// flags a run whose replies were not encoded as its step's compression asked. A custom target
// serves no counter of ours: its fields stay empty (not counted).
func (s *Measurer) addEncodings(ctx context.Context, rec *record.Record, r scenario.Run, service string, start, end time.Time) {
	if r.Custom != nil {
		return
	}
	by, err := s.Meter.Encodings(ctx, service, start, end)
	if err != nil {
		s.Log("warning: %s: the server's encodings: %v", r.ID, err)
		return
	}
	rec.RequestEncoding = EncodingText(by["request"])
	rec.ReplyEncoding = EncodingText(by["reply"])
	if EncodingMismatch(r.Compression, by["reply"]) {
		rec.AddFlag(record.FlagEncodingMismatch)
	}
}

// EncodingText says what a direction's counts were: the one encoding when every message had
// it ("identity", "gzip"), else each encoding's share, the largest first ("gzip 97%, identity
// 3%"); empty when nothing was counted.
func EncodingText(counts map[string]float64) string {
	var total float64
	names := make([]string, 0, len(counts))
	for n, v := range counts {
		total += v
		names = append(names, n)
	}
	if total <= 0 {
		return ""
	}
	if len(names) == 1 {
		return names[0]
	}
	sort.Slice(names, func(i, j int) bool {
		if counts[names[i]] != counts[names[j]] {
			return counts[names[i]] > counts[names[j]]
		}
		return names[i] < names[j]
	})
	parts := make([]string, len(names))
	for i, n := range names {
		parts[i] = fmt.Sprintf("%s %g%%", n, math.Round(1000*counts[n]/total)/10)
	}
	return strings.Join(parts, ", ")
}

// EncodingMismatch reports whether replies were encoded other than compression asks: any reply
// in another encoding than gzip under gzip, or than identity under none (and the default "").
// Counts of nothing cannot mismatch.
func EncodingMismatch(compression string, replies map[string]float64) bool {
	want := "identity"
	if compression == scenario.CompressionGzip {
		want = "gzip"
	}
	for enc, n := range replies {
		if enc != want && n > 0 {
			return true
		}
	}
	return false
}
