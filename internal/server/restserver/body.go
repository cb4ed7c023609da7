package restserver

import (
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"

	"github.com/protobench/protobench/internal/serverkit"
)

// encoding is how a body is written: JSON (raw bytes for Echo) or protobuf.
type encoding uint8

const (
	encJSON encoding = iota
	encProto
)

// requestEncoding is the request body's encoding, from its Content-Type; anything but protobuf
// is read as JSON, as before protobuf bodies existed (wrk scripts send no Content-Type).
func requestEncoding(r *http.Request) encoding {
	if isProtobuf(r.Header.Get("Content-Type")) {
		return encProto
	}
	return encJSON
}

// responseEncoding picks the response's encoding from Accept, falling back to the request's own
// (def) when Accept is absent or names neither encoding (*/*, as curl sends). Quality values are
// not weighed: a client that names protobuf at all gets protobuf.
func responseEncoding(r *http.Request, def encoding) encoding {
	accept := r.Header.Get("Accept")
	switch {
	case accept == "":
		return def
	case strings.Contains(accept, ContentTypeProtobuf):
		return encProto
	case strings.Contains(accept, "json") || strings.Contains(accept, ContentTypeOctetStream):
		return encJSON
	}
	return def
}

func isProtobuf(contentType string) bool {
	mediaType, _, _ := strings.Cut(contentType, ";")
	return strings.EqualFold(strings.TrimSpace(mediaType), ContentTypeProtobuf)
}

// firstReadBytes is the most readBody allocates before any of the body has arrived; the buffer
// then doubles as bytes come in, up to the declared length.
const firstReadBytes = 64 << 10

// readBody reads the whole body, at most limit bytes. A declared length above the limit is
// refused before reading. The buffer grows with what has arrived rather than being sized by the
// declared length, so a client that declares 16 MiB and sends nothing costs 64 KiB, not 16 MiB;
// a body of known length up to 64 KiB (every small request) is still one exact allocation. On
// failure it returns the HTTP status for the error.
func (s *Server) readBody(w http.ResponseWriter, r *http.Request, limit int) ([]byte, int, error) {
	declared := r.ContentLength
	if declared > int64(limit) {
		return nil, http.StatusRequestEntityTooLarge, fmt.Errorf("body of %d bytes exceeds the limit of %d", declared, limit)
	}
	if declared == 0 {
		return nil, 0, nil
	}
	s.bodyDeadline(w)
	body := http.MaxBytesReader(rawWriter(w), r.Body, int64(limit))
	size := 512
	if declared > 0 {
		size = int(min(declared, firstReadBytes))
	}
	buf := make([]byte, 0, size)
	for {
		if len(buf) == cap(buf) {
			if declared > 0 && int64(len(buf)) == declared {
				return buf, 0, nil
			}
			grown := 2 * cap(buf)
			if declared > 0 {
				grown = int(min(int64(grown), declared))
			}
			buf = append(buf, make([]byte, grown-len(buf))...)[:len(buf)]
		}
		n, err := body.Read(buf[len(buf):cap(buf)])
		buf = buf[:len(buf)+n]
		if err == io.EOF {
			if declared > 0 && int64(len(buf)) < declared {
				return nil, http.StatusBadRequest, fmt.Errorf("reading body: %d of its %d bytes arrived", len(buf), declared)
			}
			return buf, 0, nil
		}
		if err != nil {
			if code, msg := s.bodyError(err, r, limit); code != 0 {
				return nil, code, errors.New(msg)
			}
			return nil, http.StatusBadRequest, fmt.Errorf("reading body: %v", err)
		}
	}
}

// bodyDeadline gives the request body the read timeout from now (serverkit.BodyDeadline).
func (s *Server) bodyDeadline(w http.ResponseWriter) { serverkit.BodyDeadline(w, s.readTimeout) }

// bodyError maps the errors of reading a body that are not the client's syntax: the size limit
// (413), the read timeout (408) and a Content-Encoding the server does not take (415). It
// returns 0 for any other error.
func (s *Server) bodyError(err error, r *http.Request, limit int) (int, string) {
	var tooBig *http.MaxBytesError
	switch {
	case errors.Is(err, errEncoding):
		return http.StatusUnsupportedMediaType, s.encodingRefused(r)
	case errors.As(err, &tooBig):
		return http.StatusRequestEntityTooLarge, fmt.Sprintf("body exceeds the limit of %d bytes", limit)
	case errors.Is(err, os.ErrDeadlineExceeded):
		return http.StatusRequestTimeout, "body did not arrive within the read timeout"
	}
	return 0, ""
}
