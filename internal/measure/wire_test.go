package measure

import (
	"testing"

	"github.com/protobench/protobench/internal/record"
	"github.com/protobench/protobench/internal/scenario"
)

func TestWireOf(t *testing.T) {
	for _, c := range []struct {
		name   string
		rec    record.Record
		target string
		want   record.Wire
	}{
		{"gRPC cleartext, connections kept", record.Record{Requests: 1000, Connections: 4, DurationS: 1}, "grpc",
			record.Wire{Protocol: "h2c", Encoding: "protobuf", Compression: "none", RequestsPerConnection: 250, ConnectionsFrom: "the tool's connections, opened before the window and kept"}},
		{"REST over HTTP/1.1 with gzip", record.Record{Requests: 1000, Connections: 10, HTTPVersion: "1.1", Encoding: "json", Compression: "gzip"}, "rest",
			record.Wire{Protocol: "HTTP/1.1", Encoding: "json", Compression: "gzip", RequestsPerConnection: 100, ConnectionsFrom: "the tool's connections, opened before the window and kept"}},
		{"TLS: ALPN and handshakes", record.Record{Requests: 1000, Connections: 10, DurationS: 2, TLS: &record.TLSState{Version: "TLS 1.3", ALPN: "h2", HandshakesPerSec: 50}}, "grpc",
			record.Wire{Protocol: "h2 (ALPN)", Encoding: "protobuf", Compression: "none", TLSVersion: "TLS 1.3", RequestsPerConnection: 10, ConnectionsFrom: "the server's TLS handshakes in the window"}},
		{"churn", record.Record{Requests: 1000, Connections: 10, RequestsPerConnection: 5, HTTPVersion: "2"}, "rest",
			record.Wire{Protocol: "h2c", Compression: "none", RequestsPerConnection: 5, ConnectionsFrom: "the step's churn: each connection replaced after that many"}},
	} {
		got := wireOf(c.rec, scenario.Run{Target: c.target})
		if *got != c.want {
			t.Errorf("%s: %+v, want %+v", c.name, *got, c.want)
		}
	}
}
