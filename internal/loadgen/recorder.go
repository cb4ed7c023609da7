package loadgen

import (
	"sync"
	"sync/atomic"
	"time"

	hdr "github.com/HdrHistogram/hdrhistogram-go"
)

// recorder holds one worker's statistics. Only its worker writes it, except once a second when
// the collector swaps the interval histograms out, so its mutex is almost never contended: the
// cost per request is an uncontended lock and a few histogram increments, and nothing is
// allocated.
type recorder struct {
	mu   sync.Mutex
	open bool // the open model also records scheduler lag

	// The measured window, at full precision.
	latency  *hdr.Histogram // from the intended time: what a user arriving on schedule saw
	service  *hdr.Histogram // from the actual send: what the server took
	lag      *hdr.Histogram // actual send minus intended send (open model)
	requests int64
	errors   int64
	codes    map[string]int64 // measured errors by code

	// Since the last collection, warm-up included: the per-second series and live metrics.
	iv interval
	// liveOK and liveCodes count every finished request since the start, for the live counter;
	// successes get a plain counter to keep a map lookup off the common path.
	liveOK    int64
	liveCodes map[string]int64

	// warm and warmErrors count the finished requests whose tickets were the warm-up's, by
	// the same flag that keeps them out of requests, so that warm-up and window add up to
	// every finished request (the server's own count of the run is set against that sum).
	warm, warmErrors int64

	incomplete int64 // measured, in flight or held unsent when the run ended; neither success nor error
	unsent     int64 // the part of incomplete that was claimed but never sent
	inflight   atomic.Int64
	_          [64]byte // keep the next worker's hot fields off this cache line
}

// interval is what a recorder gathered since the collector last looked.
type interval struct {
	latency  *hdr.Histogram
	service  *hdr.Histogram
	requests int64
	errors   int64
	lagMax   time.Duration
}

func newInterval() interval {
	return interval{latency: newSeriesHistogram(), service: newSeriesHistogram()}
}

func newRecorder(open bool) *recorder {
	r := &recorder{
		open:      open,
		latency:   NewHistogram(),
		service:   NewHistogram(),
		codes:     map[string]int64{},
		liveCodes: map[string]int64{},
		iv:        newInterval(),
	}
	if open {
		r.lag = NewHistogram()
	}
	return r
}

// record adds one finished request.
func (r *recorder) record(t Ticket, start, end time.Time, err error) {
	latency := end.Sub(t.Intended)
	service := end.Sub(start)
	lag := start.Sub(t.Intended)
	code := CodeOK
	if err != nil {
		code = Classify(err)
	}
	r.mu.Lock()
	recordDuration(r.iv.latency, latency)
	recordDuration(r.iv.service, service)
	r.iv.requests++
	if lag > r.iv.lagMax {
		r.iv.lagMax = lag
	}
	if err == nil {
		r.liveOK++
	} else {
		r.iv.errors++
		r.countCode(r.liveCodes, code)
	}
	if t.Measured {
		recordDuration(r.latency, latency)
		recordDuration(r.service, service)
		if r.open {
			recordDuration(r.lag, lag)
		}
		r.requests++
		if err != nil {
			r.errors++
			r.countCode(r.codes, code)
		}
	} else {
		r.warm++
		if err != nil {
			r.warmErrors++
		}
	}
	r.mu.Unlock()
}

// countCode bumps a code's count, folding codes beyond a fixed number into one so that a driver
// bug cannot grow the map (or the label set) without bound.
func (r *recorder) countCode(m map[string]int64, code string) {
	if _, ok := m[code]; !ok && len(m) >= maxDistinctErrorCodes {
		code = "other"
	}
	m[code]++
}

// abandon counts a ticket the run ended under: in flight (sent) or claimed and never sent. In the
// open model a measured one enters the latency with the time from its intended send to now, the
// end of the run; a warm-up one, or any in the closed model (which has no schedule to miss),
// is dropped.
func (r *recorder) abandon(t Ticket, now time.Time, sent bool) {
	if !t.Measured {
		return
	}
	r.mu.Lock()
	r.incomplete++
	if !sent {
		r.unsent++
	}
	if r.open {
		// The live histogram gets it too, so that a dashboard's latency holds the same requests
		// as the result's.
		recordDuration(r.latency, now.Sub(t.Intended))
		recordDuration(r.iv.latency, now.Sub(t.Intended))
	}
	r.mu.Unlock()
}

// swap hands the interval over to the collector and starts a new one; fresh is a recycled,
// reset interval so that the swap allocates nothing.
func (r *recorder) swap(fresh interval) interval {
	r.mu.Lock()
	old := r.iv
	r.iv = fresh
	r.mu.Unlock()
	return old
}

// liveCodeCounts copies the cumulative counts by code into dst.
func (r *recorder) liveCodeCounts(dst map[string]int64) {
	r.mu.Lock()
	dst[CodeOK] += r.liveOK
	for c, n := range r.liveCodes {
		dst[c] += n
	}
	r.mu.Unlock()
}
