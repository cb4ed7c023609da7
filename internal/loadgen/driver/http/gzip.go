package httpdriver

import (
	"slices"

	"github.com/protobench/protobench/internal/loadgen"
	"github.com/protobench/protobench/internal/wire/h2wire"
)

// withCompression applies --compression to a prebuilt request. Under gzip the body is
// compressed once, here, rather than per request: every request of a run carries the same
// bytes, and the server inflates each one, which is the work a gzip step measures. Under none
// nothing is advertised, so a server that compresses anyway is the server's doing, and counted
// (outcome).
func withCompression(cfg *loadgen.Config, r request) (request, error) {
	if !cfg.Gzip() {
		return r, nil
	}
	r.headers = append(slices.Clone(r.headers), h2wire.Field{Name: "Accept-Encoding", Value: "gzip"})
	if len(r.body) == 0 {
		return r, nil
	}
	body, err := loadgen.GzipOnce(r.body)
	if err != nil {
		return r, err
	}
	r.body = body
	r.headers = append(r.headers, h2wire.Field{Name: "Content-Encoding", Value: "gzip"})
	return r, nil
}

// gzipped reports whether an HTTP/2 stream's reply came with Content-Encoding gzip (the
// sessions keep that one field, contentEncoding).
func gzipped(fields []h2wire.Field) bool {
	for _, f := range fields {
		if f.Name == contentEncoding && f.Value == "gzip" {
			return true
		}
	}
	return false
}

// contentEncoding is the response field the HTTP/2 sessions keep for outcome.
const contentEncoding = "content-encoding"
