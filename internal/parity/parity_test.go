package parity

import (
	"strings"
	"testing"

	"github.com/protobench/protobench/internal/record"
)

func run(mod func(*record.Record)) record.Record {
	r := record.Record{Method: "GetUser", Model: "closed", Connections: 1, Concurrency: 100, Flags: []string{}}
	if mod != nil {
		mod(&r)
	}
	return r
}

func TestUnequal(t *testing.T) {
	same := []record.Record{run(nil), run(nil)}
	for _, c := range []struct {
		name string
		b    []record.Record
		want string // "" for equal work, else a part of the text
	}{
		{"same work", []record.Record{run(nil)}, ""},
		{"a different topology, same requests in flight", []record.Record{run(func(r *record.Record) { r.Connections, r.Concurrency = 100, 1 })}, ""},
		{"compression none written out", []record.Record{run(func(r *record.Record) { r.Compression = "none" })}, ""},
		{"one side gzip", []record.Record{run(func(r *record.Record) { r.Compression = "gzip" })}, "compression gzip vs none"},
		{"another method", []record.Record{run(func(r *record.Record) { r.Method = "Echo"; r.PayloadBytes = 64 })}, "method Echo vs GetUser"},
		{"TLS on one side", []record.Record{run(func(r *record.Record) { r.TLS = &record.TLSState{Version: "TLS 1.3"} })}, "TLS TLS 1.3 vs cleartext"},
		{"TLS on both, one side's version unread", []record.Record{run(func(r *record.Record) { r.TLS = &record.TLSState{} })}, "TLS TLS (version unread) vs cleartext"},
		{"churn on one side", []record.Record{run(func(r *record.Record) { r.RequestsPerConnection = 1 })}, "requests per connection 1 vs all"},
		{"more in flight", []record.Record{run(func(r *record.Record) { r.Concurrency = 50 })}, "in flight 50 vs 100"},
		{"open at another rate", []record.Record{run(func(r *record.Record) { r.Model, r.Rate = "open", 1000 })}, "model open vs closed"},
		{"a failed run does not count", []record.Record{run(nil), run(func(r *record.Record) { r.Compression = "gzip"; r.Error = "boom" })}, ""},
	} {
		got := Unequal(c.b, same)
		switch {
		case c.want == "" && got != "":
			t.Errorf("%s: %q, want equal work", c.name, got)
		case c.want != "" && (!strings.HasPrefix(got, "unequal-work: ") || !strings.Contains(got, c.want)):
			t.Errorf("%s: %q, want unequal-work naming %q", c.name, got, c.want)
		}
	}
}

func TestUnreadTLSVersionMatchesAnyTLS(t *testing.T) {
	tls13 := []record.Record{run(func(r *record.Record) { r.TLS = &record.TLSState{Version: "TLS 1.3"} })}
	unread := []record.Record{run(func(r *record.Record) { r.TLS = &record.TLSState{Source: "no handshake counters"} })}
	if got := Unequal(unread, tls13); got != "" {
		t.Errorf("an unread TLS version against TLS 1.3: %q, want equal work", got)
	}
	tls12 := []record.Record{run(func(r *record.Record) { r.TLS = &record.TLSState{Version: "TLS 1.2"} })}
	if got := Unequal(tls12, tls13); !strings.Contains(got, "TLS TLS 1.2 vs TLS 1.3") {
		t.Errorf("TLS 1.2 against 1.3: %q", got)
	}
}
