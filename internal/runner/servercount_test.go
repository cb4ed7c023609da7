package runner

import (
	"strings"
	"testing"
	"time"

	"github.com/protobench/protobench/internal/record"
	"github.com/protobench/protobench/internal/servercount"
)

func TestApplyServerCount(t *testing.T) {
	base := record.Record{Connections: 2, Concurrency: 5, Requests: 1000, Errors: 0}
	for _, c := range []struct {
		name           string
		rec            func(record.Record) record.Record
		run            servercount.Counts
		warmup         time.Duration
		wantOK         int64
		mismatch       bool
		countSaysOneOf string
	}{
		{"warmed up apart, equal", func(r record.Record) record.Record { return r }, servercount.Counts{OK: 1000}, 0, 1000, false, "exact"},
		{"warmed up apart, errors as successes", func(r record.Record) record.Record { return r }, servercount.Counts{OK: 0, Errors: 1000}, 0, 0, true, "count-mismatch"},
		{"own warm-up reported, left out", func(r record.Record) record.Record { r.WarmupRequests = 300; return r }, servercount.Counts{OK: 1305}, time.Second, 1005, false, "less the tool's own warm-up"},
		{"own warm-up unreported: one way", func(r record.Record) record.Record { return r }, servercount.Counts{OK: 1400}, time.Second, 1400, false, "one way"},
		{"own warm-up unreported, errors as successes", func(r record.Record) record.Record { return r }, servercount.Counts{OK: 10, Errors: 1390}, time.Second, 10, true, "count-mismatch"},
	} {
		rec := c.rec(base)
		applyServerCount(&rec, c.run, c.warmup)
		if rec.ServerOK != c.wantOK {
			t.Errorf("%s: server_ok %d, want %d", c.name, rec.ServerOK, c.wantOK)
		}
		if rec.HasFlag(record.FlagCountMismatch) != c.mismatch {
			t.Errorf("%s: flags %v, want count-mismatch %v (%s)", c.name, rec.Flags, c.mismatch, rec.ServerCount)
		}
		if !strings.Contains(rec.ServerCount, c.countSaysOneOf) {
			t.Errorf("%s: server_count %q does not say %q", c.name, rec.ServerCount, c.countSaysOneOf)
		}
	}
}
