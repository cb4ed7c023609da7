package loadgen

import (
	"fmt"
	"io"
	"math"
	"sort"
	"strings"
	"time"

	hdr "github.com/HdrHistogram/hdrhistogram-go"
)

// WriteText prints the human-readable report: wrk2's layout (latency distribution, detailed
// percentile spectrum, totals) followed by what wrk2 does not have (service time, scheduler lag,
// errors by code, client CPU, flags).
func WriteText(w io.Writer, r *Result) {
	fmt.Fprintf(w, "Running %s test @ %s (%s", fmtSeconds(r.DurationS), r.TargetURL, r.Method)
	if r.Pattern != "" {
		fmt.Fprintf(w, ", %s", r.Pattern)
	}
	fmt.Fprintf(w, ")\n  %s model, %d connections × %d concurrency", r.Model, r.Connections, r.Concurrency)
	if r.Model == "open" {
		fmt.Fprintf(w, ", %s, %d workers", r.Schedule, r.Workers)
	}
	fmt.Fprintf(w, ", warm-up %s, payload %d B\n\n", fmtSeconds(r.WarmupS), r.PayloadBytes)

	lat := r.latency
	if lat != nil && lat.TotalCount() > 0 {
		title := "Recorded Latency"
		if r.Model == "open" {
			title = "Recorded Latency, from intended send time"
		}
		fmt.Fprintf(w, "  Latency Distribution (HdrHistogram - %s)\n", title)
		for _, p := range []float64{50, 75, 90, 99, 99.9, 99.99, 99.999, 100} {
			fmt.Fprintf(w, " %7.3f%%  %s\n", p, fmtMs(float64(lat.ValueAtPercentile(p))/1000))
		}
		fmt.Fprintf(w, "\n  Detailed Percentile spectrum:\n")
		fmt.Fprintf(w, "       Value   Percentile   TotalCount 1/(1-Percentile)\n\n")
		for _, p := range r.LatencySpectrum {
			q := p.Percentile / 100
			inv := "inf"
			if q < 1 {
				inv = fmt.Sprintf("%.2f", 1/(1-q))
			}
			fmt.Fprintf(w, "%12.3f %12.6f %12d %12s\n", p.ValueMs, q, p.TotalCount, inv)
		}
		writeFooter(w, lat)
		fmt.Fprintln(w, "----------------------------------------------------------")
	}

	fmt.Fprintf(w, "  %d requests in %s, %s read, %s written\n", r.Requests, fmtSeconds(r.DurationS), fmtBytes(r.BytesReceived), fmtBytes(r.BytesSent))
	if r.ClientSent > 0 {
		fmt.Fprintf(w, "  (counted at the server's sink; the client sent %d)\n", r.ClientSent)
	}
	if r.MessagesReceived > 0 {
		fmt.Fprintf(w, "  %d fan-out messages received by subscribers\n", r.MessagesReceived)
	}
	if r.Errors > 0 {
		fmt.Fprintf(w, "  Errors: %d (%s)\n", r.Errors, fmtCodes(r.ErrorsByCode))
	}
	if r.Incomplete > 0 {
		fmt.Fprintf(w, "  Incomplete (never sent, or in flight at the end): %d (unsent %d)\n", r.Incomplete, r.Unsent)
	}
	fmt.Fprintf(w, "Requests/sec: %10.2f\n", r.ThroughputRPS)
	if r.DurationS > 0 {
		fmt.Fprintf(w, "Transfer/sec: %10s\n", fmtBytes(int64(float64(r.BytesReceived)/r.DurationS)))
	}
	if r.Model == "open" {
		fmt.Fprintf(w, "Target rate:  %10.2f\n", r.Rate)
	}
	l := r.LatencyMs
	fmt.Fprintf(w, "Latency ms:   mean %s  p50 %s  p90 %s  p99 %s  p99.9 %s  max %s\n", f3(l.Mean), f3(l.P50), f3(l.P90), f3(l.P99), f3(l.P999), f3(l.Max))
	if s := r.ServiceTimeMs; s != nil && r.Model == "open" {
		fmt.Fprintf(w, "Service ms:   mean %s  p50 %s  p90 %s  p99 %s  p99.9 %s  max %s\n", f3(s.Mean), f3(s.P50), f3(s.P90), f3(s.P99), f3(s.P999), f3(s.Max))
	}
	if s := r.SchedulerLagMs; s != nil {
		fmt.Fprintf(w, "Sched lag ms: p50 %s  p99 %s  max %s\n", f3(s.P50), f3(s.P99), f3(s.Max))
		fmt.Fprintf(w, "Floor ms:     %s (the fastest request, from its actual send)\n", f3(r.LatencyFloorMs))
	}
	fmt.Fprintf(w, "Client CPU:   %.2f s (%.0f%% of one core, GOMAXPROCS=%d)\n", r.ClientCPUSeconds, r.ClientCPUPercent, r.ClientGOMAXPROCS)
	if len(r.Flags) > 0 {
		fmt.Fprintf(w, "Flags:        %s\n", strings.Join(r.Flags, ", "))
	}
	if r.ServerCountWarning != "" {
		fmt.Fprintf(w, "Warning:      %s\n", r.ServerCountWarning)
	}
	if r.Error != "" {
		fmt.Fprintf(w, "Error:        %s\n", r.Error)
	}
}

func writeFooter(w io.Writer, h *hdr.Histogram) {
	fmt.Fprintf(w, "#[Mean    = %12.3f, StdDeviation   = %12.3f]\n", h.Mean()/1000, h.StdDev()/1000)
	fmt.Fprintf(w, "#[Max     = %12.3f, Total count    = %12d]\n", float64(h.Max())/1000, h.TotalCount())
}

// FormatProgress is the one-line progress shown on a TTY.
func FormatProgress(p Progress) string {
	left := (p.Total - p.Elapsed).Round(time.Second)
	if left < 0 {
		left = 0
	}
	if p.Warmup {
		return fmt.Sprintf("warm-up  %5.0f req/s  in flight %d  %s left", p.RateRPS, p.Inflight, left)
	}
	s := fmt.Sprintf("%5.1fs/%.0fs  %8.0f req/s", p.Elapsed.Seconds(), p.Total.Seconds(), p.RateRPS)
	if p.TargetRPS > 0 {
		s += fmt.Sprintf(" (target %.0f)", p.TargetRPS)
	}
	return s + fmt.Sprintf("  errors %d  p99 %s  %s left", p.Errors, fmtMs(p.P99Ms), left)
}

func fmtCodes(m map[string]int64) string {
	codes := make([]string, 0, len(m))
	for c := range m {
		codes = append(codes, c)
	}
	sort.Slice(codes, func(i, j int) bool {
		return m[codes[i]] > m[codes[j]] || (m[codes[i]] == m[codes[j]] && codes[i] < codes[j])
	})
	parts := make([]string, len(codes))
	for i, c := range codes {
		parts[i] = fmt.Sprintf("%s %d", c, m[c])
	}
	return strings.Join(parts, ", ")
}

func fmtMs(ms float64) string {
	switch {
	case ms >= 1000:
		return fmt.Sprintf("%.2fs", ms/1000)
	case ms < 1:
		return fmt.Sprintf("%.0fus", ms*1000)
	}
	return fmt.Sprintf("%.2fms", ms)
}

func f3(x float64) string { return fmt.Sprintf("%.3f", x) }

func fmtSeconds(s float64) string {
	if s == math.Trunc(s) {
		return fmt.Sprintf("%.0fs", s)
	}
	return fmt.Sprintf("%.2fs", s)
}

func fmtBytes(n int64) string {
	const unit = 1024
	if n < unit {
		return fmt.Sprintf("%dB", n)
	}
	v, suffix := float64(n), ""
	for _, s := range []string{"KB", "MB", "GB", "TB"} {
		v /= unit
		suffix = s
		if v < unit {
			break
		}
	}
	return fmt.Sprintf("%.2f%s", v, suffix)
}
