package results

import (
	"fmt"
	"strings"

	"github.com/protobench/protobench/internal/record"
)

// RunLine is one finished run's figures in a line, for a user watching the progress: what it
// served, its tail, how hard the server worked and any flag that qualifies them. A failed run
// says so instead of printing figures nobody should read.
func RunLine(r record.Record) string {
	if !r.Valid() {
		return "failed: " + firstLine(r.Error)
	}
	parts := []string{fmtNum(r.ThroughputRPS) + " req/s", "p99 " + fmtMs(r.LatencyMs.P99)}
	if r.ServerCPUPercentOfCap > 0 {
		parts = append(parts, fmt.Sprintf("server CPU %.1f %% of its cap", r.ServerCPUPercentOfCap))
	}
	line := strings.Join(parts, ", ")
	if len(r.Flags) > 0 {
		line += " [" + strings.Join(r.Flags, ", ") + "]"
	}
	return line
}

// fmtMs prints milliseconds in the unit a person reads fastest: µs below 1 ms, s from 1 s.
func fmtMs(ms float64) string {
	switch {
	case ms <= 0:
		return na
	case ms < 1:
		return fmtNum(ms*1000) + " µs"
	case ms >= 1000:
		return fmtNum(ms/1000) + " s"
	}
	return fmtNum(ms) + " ms"
}

func firstLine(s string) string {
	if s == "" {
		return "no error recorded"
	}
	s, _, _ = strings.Cut(s, "\n")
	return s
}
