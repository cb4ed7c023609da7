package httpdriver

import (
	"bytes"
	"errors"
	"fmt"
	"strconv"
)

// response is a parsed HTTP/1.1 response.
type response struct {
	status     int
	body       []byte // valid until the buffer is reused
	closeAfter bool   // the server will close the connection (Connection: close, HTTP/1.0)
	gzip       bool   // Content-Encoding: gzip
}

// respBuffer accumulates one response's bytes and parses them in place; it is reused for every
// response on a connection, so steady state allocates nothing.
type respBuffer struct {
	buf     []byte
	n       int    // bytes held
	scratch []byte // decoded chunked body
}

const initialBufferBytes = 16 << 10

// space returns free room to read into, growing the buffer when it is full (a body larger than
// the buffer).
func (b *respBuffer) space() []byte {
	if b.buf == nil {
		b.buf = make([]byte, initialBufferBytes)
	}
	if b.n == len(b.buf) {
		nb := make([]byte, 2*len(b.buf))
		copy(nb, b.buf[:b.n])
		b.buf = nb
	}
	return b.buf[b.n:]
}

func (b *respBuffer) reset() { b.n = 0 }

var errMalformed = errors.New("malformed HTTP response")

// parse reports whether the buffer holds a complete response, and consumes it if so. A server
// that answers one request at a time sends nothing after it, so leftover bytes are an error.
func (b *respBuffer) parse() (response, bool, error) {
	r, total, err := parseResponse(b.buf[:b.n], &b.scratch)
	if err != nil || total == 0 {
		return r, false, err
	}
	if total != b.n {
		return r, false, fmt.Errorf("%w: %d bytes after the response", errMalformed, b.n-total)
	}
	b.n = 0
	return r, true, nil
}

var (
	crlfcrlf = []byte("\r\n\r\n")
	crlf     = []byte("\r\n")
)

// parseResponse parses one response at the start of p. It returns the response and its length
// in bytes, or a length of 0 when p does not hold all of it yet. Chunked bodies are decoded into
// *scratch. Only what a load generator needs is read: the status, Content-Length,
// Transfer-Encoding: chunked, Connection: close and Content-Encoding: gzip.
func parseResponse(p []byte, scratch *[]byte) (response, int, error) {
	var r response
	end := bytes.Index(p, crlfcrlf)
	if end < 0 {
		if len(p) > 64<<10 {
			return r, 0, fmt.Errorf("%w: no end of headers in %d bytes", errMalformed, len(p))
		}
		return r, 0, nil
	}
	head := p[:end+2]
	// "HTTP/1.1 200 OK\r\n"
	if len(head) < 14 || !bytes.HasPrefix(head, []byte("HTTP/1.")) || head[8] != ' ' {
		return r, 0, fmt.Errorf("%w: status line %q", errMalformed, truncate(head))
	}
	for _, c := range head[9:12] {
		if c < '0' || c > '9' {
			return r, 0, fmt.Errorf("%w: status line %q", errMalformed, truncate(head))
		}
	}
	r.status = int(head[9]-'0')*100 + int(head[10]-'0')*10 + int(head[11]-'0')
	if r.status < 100 {
		return r, 0, fmt.Errorf("%w: status line %q", errMalformed, truncate(head))
	}
	r.closeAfter = head[7] == '0' // HTTP/1.0 closes unless told otherwise
	length, chunked := -1, false
	line := head[bytes.Index(head, crlf)+2:]
	for len(line) > 0 {
		eol := bytes.Index(line, crlf)
		h := line[:eol]
		line = line[eol+2:]
		colon := bytes.IndexByte(h, ':')
		if colon < 0 {
			return r, 0, fmt.Errorf("%w: header %q", errMalformed, truncate(h))
		}
		name, value := h[:colon], bytes.TrimSpace(h[colon+1:])
		switch {
		case asciiEqualFold(name, "content-length"):
			n, err := strconv.Atoi(string(value))
			if err != nil || n < 0 {
				return r, 0, fmt.Errorf("%w: Content-Length %q", errMalformed, value)
			}
			length = n
		case asciiEqualFold(name, "transfer-encoding"):
			chunked = bytes.Contains(bytes.ToLower(value), []byte("chunked"))
		case asciiEqualFold(name, "connection"):
			r.closeAfter = asciiEqualFold(value, "close")
		case asciiEqualFold(name, "content-encoding"):
			r.gzip = asciiEqualFold(value, "gzip")
		}
	}
	bodyStart := end + 4
	switch {
	case chunked:
		n, err := decodeChunked(p[bodyStart:], scratch)
		if n == 0 || err != nil {
			return r, 0, err
		}
		r.body = *scratch
		return r, bodyStart + n, nil
	case length >= 0:
		if len(p) < bodyStart+length {
			return r, 0, nil
		}
		r.body = p[bodyStart : bodyStart+length]
		return r, bodyStart + length, nil
	case r.status == 204 || r.status == 304 || r.status/100 == 1:
		return r, bodyStart, nil
	default:
		// A body delimited by the end of the connection: a load generator cannot wait for that.
		return r, 0, fmt.Errorf("%w: status %d without Content-Length or chunked encoding", errMalformed, r.status)
	}
}

// decodeChunked decodes a complete chunked body from p into *out and returns the bytes it took,
// or 0 when p does not hold all of it yet.
func decodeChunked(p []byte, out *[]byte) (int, error) {
	body := (*out)[:0]
	pos := 0
	for {
		eol := bytes.Index(p[pos:], crlf)
		if eol < 0 {
			return 0, nil
		}
		sizeField := p[pos : pos+eol]
		if i := bytes.IndexByte(sizeField, ';'); i >= 0 {
			sizeField = sizeField[:i]
		}
		size, err := strconv.ParseInt(string(bytes.TrimSpace(sizeField)), 16, 64)
		if err != nil || size < 0 || size > 1<<40 {
			return 0, fmt.Errorf("%w: chunk size %q", errMalformed, truncate(sizeField))
		}
		pos += eol + 2
		if size == 0 {
			// Trailers, if any, then the blank line.
			for {
				eol := bytes.Index(p[pos:], crlf)
				if eol < 0 {
					return 0, nil
				}
				pos += eol + 2
				if eol == 0 {
					*out = body
					return pos, nil
				}
			}
		}
		if len(p) < pos+int(size)+2 {
			return 0, nil
		}
		body = append(body, p[pos:pos+int(size)]...)
		pos += int(size)
		if !bytes.Equal(p[pos:pos+2], crlf) {
			return 0, fmt.Errorf("%w: chunk not followed by CRLF", errMalformed)
		}
		pos += 2
	}
}

func asciiEqualFold(b []byte, s string) bool {
	if len(b) != len(s) {
		return false
	}
	for i := 0; i < len(b); i++ {
		c := b[i]
		if 'A' <= c && c <= 'Z' {
			c += 'a' - 'A'
		}
		if c != s[i] {
			return false
		}
	}
	return true
}
