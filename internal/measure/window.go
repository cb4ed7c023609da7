package measure

import (
	"time"

	"github.com/protobench/protobench/internal/record"
)

// measuredWindow is the interval the tool measured. A tool that reports its own window (our
// generator does) is believed when it lies within the container's lifetime; otherwise the window
// is the tail of the container's run, of the length the tool reports, since a tool's warm-up and
// start-up come first.
func measuredWindow(parsed record.Record, started, ended time.Time) (time.Time, time.Time) {
	slack := time.Second
	if parsed.StartUnix > 0 && parsed.EndUnix > parsed.StartUnix {
		s := time.Unix(0, int64(parsed.StartUnix*1e9))
		e := time.Unix(0, int64(parsed.EndUnix*1e9))
		if !s.Before(started.Add(-slack)) && !e.After(ended.Add(slack)) {
			return s, e
		}
	}
	start := ended.Add(-time.Duration(parsed.DurationS * float64(time.Second)))
	if parsed.DurationS <= 0 || start.Before(started) {
		start = started
	}
	return start, ended
}

// lifetimeWindow is the interval the tool measured when its container's own start and finish
// are known: the tool's own window when it reports one within that lifetime, otherwise the
// reported duration counted from the container's start plus the tool's own warm-up. Counting
// from the start, not back from the finish, keeps a tool that takes its time to stop (writing
// its report, a slow exit) from shifting the window into idle time, which would read the
// server's and the tool's CPU low and could flag unsaturated wrongly.
func lifetimeWindow(parsed record.Record, started, finished time.Time, warmup time.Duration) (time.Time, time.Time) {
	slack := time.Second
	if parsed.StartUnix > 0 && parsed.EndUnix > parsed.StartUnix {
		s := time.Unix(0, int64(parsed.StartUnix*1e9))
		e := time.Unix(0, int64(parsed.EndUnix*1e9))
		if !s.Before(started.Add(-slack)) && !e.After(finished.Add(slack)) {
			return s, e
		}
	}
	start := started.Add(warmup)
	if !start.Before(finished) {
		start = started
	}
	end := finished
	if d := time.Duration(parsed.DurationS * float64(time.Second)); d > 0 && start.Add(d).Before(finished) {
		end = start.Add(d)
	}
	return start, end
}
