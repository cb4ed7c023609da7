// Package parity decides whether two sets of runs did the same work, so that a ratio between
// them, or a change from one to the other, measures only the axis being compared. Two sides
// must agree on the method, the logical payload, compression, the TLS version, requests per
// connection, requests in flight, the model and its rate; where they do not, the row reads
// "unequal-work: <what differs>" and gets no verdict.
package parity

import (
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/protobench/protobench/internal/record"
)

// Work is what one run did, in the terms the parity rule compares. Adding a term is one field
// here and one line in Of.
type Work struct {
	Method                string
	PayloadBytes          int
	Compression           string
	TLSVersion            string
	RequestsPerConnection int
	InFlight              int
	Model                 string
	Rate                  float64
}

// Of is the work a record did.
func Of(r record.Record) Work {
	w := Work{
		Method:                r.Method,
		PayloadBytes:          r.PayloadBytes,
		Compression:           r.CompressionOf(),
		TLSVersion:            "cleartext",
		RequestsPerConnection: r.RequestsPerConnection,
		InFlight:              r.Connections * max(r.Concurrency, 1),
		Model:                 r.Model,
		Rate:                  r.Rate,
	}
	if r.InFlight > 0 {
		w.InFlight = r.InFlight
	}
	if r.TLS != nil {
		w.TLSVersion = r.TLS.Version
		if w.TLSVersion == "" {
			w.TLSVersion = TLSUnread
		}
	}
	return w
}

// TLSUnread is a TLS run whose server does not say what it negotiated (the Python server
// counts no handshakes): it matches any TLS version, never cleartext.
const TLSUnread = "TLS (version unread)"

// sameTLS says whether two sides' TLS values agree, an unread version matching any TLS one.
func sameTLS(x, y []string) bool {
	known := func(xs []string) (out []string) {
		for _, v := range xs {
			if v != TLSUnread {
				out = append(out, v)
			}
		}
		return out
	}
	kx, ky := known(x), known(y)
	if len(kx) == 0 || len(ky) == 0 {
		return !slices.Contains(x, "cleartext") && !slices.Contains(y, "cleartext") ||
			strings.Join(x, "|") == strings.Join(y, "|")
	}
	return strings.Join(kx, "|") == strings.Join(ky, "|")
}

// terms names each term and renders its value, in the order the rule reports them.
func terms(w Work) []struct{ name, value string } {
	return []struct{ name, value string }{
		{"method", w.Method},
		{"payload", fmt.Sprintf("%d B", w.PayloadBytes)},
		{"compression", w.Compression},
		{"TLS", w.TLSVersion},
		{"requests per connection", requestsPerConnection(w.RequestsPerConnection)},
		{"in flight", fmt.Sprint(w.InFlight)},
		{"model", w.Model},
		{"rate", fmt.Sprintf("%g/s", w.Rate)},
	}
}

func requestsPerConnection(n int) string {
	if n <= 0 {
		return "all (kept open)"
	}
	return fmt.Sprint(n)
}

// Diff lists each term on which the two sides' runs differ, as "compression gzip vs none". A
// side is every valid run beneath it: runs of one side that disagree among themselves show all
// their values.
func Diff(a, b []record.Record) []string {
	va, vb := values(a), values(b)
	var out []string
	for i, t := range terms(Work{}) {
		x, y := va[i], vb[i]
		if len(x) == 0 || len(y) == 0 || strings.Join(x, "|") == strings.Join(y, "|") || (t.name == "TLS" && sameTLS(x, y)) {
			continue
		}
		out = append(out, fmt.Sprintf("%s %s vs %s", t.name, strings.Join(x, "|"), strings.Join(y, "|")))
	}
	return out
}

// values is, per term, the sorted distinct values of the valid runs.
func values(recs []record.Record) [][]string {
	n := len(terms(Work{}))
	seen := make([]map[string]bool, n)
	for i := range seen {
		seen[i] = map[string]bool{}
	}
	for _, r := range recs {
		if !r.Valid() {
			continue
		}
		for i, t := range terms(Of(r)) {
			seen[i][t.value] = true
		}
	}
	out := make([][]string, n)
	for i, m := range seen {
		for v := range m {
			out[i] = append(out[i], v)
		}
		sort.Strings(out[i])
	}
	return out
}

// Unequal is the row's text where the two sides did different work ("unequal-work:
// compression gzip vs none"), or "" where they did the same.
func Unequal(a, b []record.Record) string {
	d := Diff(a, b)
	if len(d) == 0 {
		return ""
	}
	return "unequal-work: " + strings.Join(d, "; ")
}
