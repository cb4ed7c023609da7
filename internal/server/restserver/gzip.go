package restserver

import (
	"bytes"
	"compress/gzip"
	"errors"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync"
)

// Compression over HTTP is a setting of the run, never a side effect of what a client happens
// to advertise (issue 35: connect-go once gzipped every reply because our client listed gzip).
// Under compression none (the default) the server inflates nothing and compresses nothing: a
// body with a Content-Encoding is refused with 415, so a client that compresses against a
// server that does not shows up as errors rather than as a quietly different workload. Under
// gzip it inflates gzip bodies and compresses every reply, errors included, to a client whose
// Accept-Encoding names gzip, as the usual net/http middleware does.

// errEncoding is what a body whose Content-Encoding the server does not take reads as; the
// handlers' body errors turn it into 415 (bodyError).
var errEncoding = errors.New("unsupported Content-Encoding")

// encodingRefused is the message of that 415.
func (s *Server) encodingRefused(r *http.Request) string {
	if s.gzip {
		return "Content-Encoding " + strconv.Quote(r.Header.Get("Content-Encoding")) + ": this server inflates gzip only"
	}
	return "Content-Encoding " + strconv.Quote(r.Header.Get("Content-Encoding")) + ": this server runs with compression none and inflates nothing"
}

// negotiate applies the compression setting to one request: it swaps a compressed body for its
// inflated stream (or for errEncoding), and wraps w so that the reply is compressed when it
// should be. The default path (identity body, compression none) returns w and r untouched.
func (s *Server) negotiate(w http.ResponseWriter, r *http.Request) (http.ResponseWriter, *http.Request) {
	if ce := r.Header.Get("Content-Encoding"); ce != "" && !strings.EqualFold(ce, "identity") {
		if s.gzip && strings.EqualFold(ce, "gzip") {
			// The compressed stream is capped as well as the inflated one (readBody's limit):
			// deflate's empty blocks would otherwise let a client send without end for no output.
			r.Body = &inflatingBody{src: http.MaxBytesReader(w, r.Body, int64(s.maxMessage)+int64(s.maxMessage)/100+1024), close: r.Body}
		} else {
			r.Body = errBody{r.Body}
		}
		r.ContentLength = -1 // the inflated length is not the declared one
	}
	if s.gzip && acceptsGzip(r.Header.Get("Accept-Encoding")) {
		return &gzipReply{ResponseWriter: w}, r
	}
	return w, r
}

// acceptsGzip reports whether an Accept-Encoding value names gzip with a non-zero quality.
func acceptsGzip(accept string) bool {
	for _, part := range strings.Split(accept, ",") {
		name, params, _ := strings.Cut(part, ";")
		if !strings.EqualFold(strings.TrimSpace(name), "gzip") {
			continue
		}
		q, found := strings.CutPrefix(strings.TrimSpace(params), "q=")
		if !found {
			return true
		}
		v, err := strconv.ParseFloat(strings.TrimSpace(q), 64)
		return err == nil && v > 0
	}
	return false
}

// errBody reads as errEncoding.
type errBody struct{ io.Closer }

func (errBody) Read([]byte) (int, error) { return 0, errEncoding }

// inflatingBody inflates a gzip body as it is read; the gzip reader is made on the first read,
// so a malformed header surfaces as the handler's body error (400), like malformed JSON.
type inflatingBody struct {
	src   io.Reader
	close io.Closer
	zr    *gzip.Reader
	err   error
}

func (b *inflatingBody) Read(p []byte) (int, error) {
	if b.zr == nil && b.err == nil {
		b.zr, b.err = gzip.NewReader(b.src)
	}
	if b.err != nil {
		return 0, b.err
	}
	return b.zr.Read(p)
}

func (b *inflatingBody) Close() error { return b.close.Close() }

// gzipReply marks a reply to be compressed; writeBody does it, with the whole body at hand.
type gzipReply struct{ http.ResponseWriter }

// Unwrap lets http.ResponseController (the per-request body deadline) reach the connection.
func (g *gzipReply) Unwrap() http.ResponseWriter { return g.ResponseWriter }

// rawWriter is the server's own ResponseWriter under a gzipReply: http.MaxBytesReader tells the
// server to close an oversized request's connection only through it.
func rawWriter(w http.ResponseWriter) http.ResponseWriter {
	if g, ok := w.(*gzipReply); ok {
		return g.ResponseWriter
	}
	return w
}

// compressed holds a gzip writer and its output, reused across replies.
type compressed struct {
	buf bytes.Buffer
	zw  *gzip.Writer
}

var compressors = sync.Pool{New: func() any {
	c := &compressed{}
	c.zw = gzip.NewWriter(&c.buf)
	return c
}}

// gzipBody compresses b at gzip's default level; the caller puts c back once the bytes are
// written.
func gzipBody(b []byte) (out []byte, c *compressed) {
	c = compressors.Get().(*compressed)
	c.buf.Reset()
	c.zw.Reset(&c.buf)
	_, _ = c.zw.Write(b) // a bytes.Buffer does not fail
	_ = c.zw.Close()
	return c.buf.Bytes(), c
}
