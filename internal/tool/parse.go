package tool

import (
	"bytes"
	"strings"

	"github.com/protobench/protobench/internal/record"
)

// NewRecord is the record an adapter's Parse starts from: the step's settings as the invocation
// gives them, so that every tool reports them alike, and the target rate only in the open model,
// where there is one.
func NewRecord(name string, inv Invocation) record.Record {
	rec := record.Record{
		Target: inv.Target, Tool: name, Method: inv.Method, Model: inv.Model,
		Connections: inv.Connections, Concurrency: inv.Concurrency, PayloadBytes: inv.PayloadBytes,
	}
	if inv.Model == "open" {
		rec.Rate = inv.RatePerSec
	}
	return rec
}

// StderrTail quotes the end of the tool's stderr for an error message, as "; <program> stderr:
// ...", or is empty when the tool printed nothing there. Tools report their own failures (a bad
// flag, a script error) on stderr, and the end is kept because that is where they say it.
func (r Raw) StderrTail(program string) string {
	s := strings.TrimSpace(string(r.Stderr))
	if s == "" {
		return ""
	}
	if len(s) > 500 {
		s = "…" + s[len(s)-500:]
	}
	return "; " + program + " stderr: " + s
}

// Threads is the event-loop thread count for a tool with that many connections: maxThreads, but
// never more threads than connections (wrk and h2load refuse that), and at least one.
func Threads(connections, maxThreads int) int { return max(1, min(connections, maxThreads)) }

// LastLine is the last non-blank line of a program's output, for a one-line error. The line's
// leading white space is kept: callers that want it gone trim it.
func LastLine(b []byte) string {
	b = bytes.TrimSpace(b)
	if i := bytes.LastIndexByte(b, '\n'); i >= 0 {
		b = b[i+1:]
	}
	return string(b)
}
