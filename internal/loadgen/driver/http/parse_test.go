package httpdriver

import (
	"bytes"
	"strings"
	"testing"
)

func TestParseResponse(t *testing.T) {
	tests := []struct {
		name       string
		in         string
		complete   bool // the whole input is one response
		wantStatus int
		wantBody   string
		wantClose  bool
		wantErr    string
	}{
		{name: "content length", in: "HTTP/1.1 200 OK\r\nContent-Length: 5\r\nContent-Type: x\r\n\r\nhello", complete: true, wantStatus: 200, wantBody: "hello"},
		{name: "headers incomplete", in: "HTTP/1.1 200 OK\r\nContent-Le"},
		{name: "body incomplete", in: "HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhel"},
		{name: "header names fold case", in: "HTTP/1.1 404 Not Found\r\ncontent-LENGTH: 2\r\nCONNECTION: Close\r\n\r\n{}", complete: true, wantStatus: 404, wantBody: "{}", wantClose: true},
		{name: "chunked", in: "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n2;ext=1\r\nde\r\n0\r\n\r\n", complete: true, wantStatus: 200, wantBody: "abcde"},
		{name: "chunked with trailer", in: "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n1\r\nx\r\n0\r\nX-T: 1\r\n\r\n", complete: true, wantStatus: 200, wantBody: "x"},
		{name: "chunked incomplete", in: "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n0\r\n"},
		{name: "HTTP/1.0 closes", in: "HTTP/1.0 200 OK\r\nContent-Length: 0\r\n\r\n", complete: true, wantStatus: 200, wantClose: true},
		{name: "no content", in: "HTTP/1.1 204 No Content\r\n\r\n", complete: true, wantStatus: 204},
		{name: "garbage status", in: "SSH-2.0-OpenSSH\r\n\r\n", wantErr: "status line"},
		{name: "bad status code", in: "HTTP/1.1 2x0 OK\r\n\r\n", wantErr: "status line"},
		{name: "bad length", in: "HTTP/1.1 200 OK\r\nContent-Length: -1\r\n\r\n", wantErr: "Content-Length"},
		{name: "header without colon", in: "HTTP/1.1 200 OK\r\nBroken\r\n\r\n", wantErr: "header"},
		{name: "body to end of connection", in: "HTTP/1.1 200 OK\r\n\r\nabc", wantErr: "without Content-Length"},
		{name: "bad chunk size", in: "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n", wantErr: "chunk size"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var scratch []byte
			r, n, err := parseResponse([]byte(tc.in), &scratch)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err %v, want one containing %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			want := 0
			if tc.complete {
				want = len(tc.in)
			}
			if n != want {
				t.Fatalf("length %d, want %d", n, want)
			}
			if n == 0 {
				return
			}
			if r.status != tc.wantStatus || string(r.body) != tc.wantBody || r.closeAfter != tc.wantClose {
				t.Errorf("got status %d body %q close %v, want %d %q %v", r.status, r.body, r.closeAfter, tc.wantStatus, tc.wantBody, tc.wantClose)
			}
		})
	}
}

func TestRespBufferGrowsForLargeBodies(t *testing.T) {
	body := bytes.Repeat([]byte("x"), 100_000)
	msg := append([]byte("HTTP/1.1 200 OK\r\nContent-Length: 100000\r\n\r\n"), body...)
	var rb respBuffer
	for len(msg) > 0 {
		n := copy(rb.space(), msg)
		rb.n += n
		msg = msg[n:]
	}
	r, done, err := rb.parse()
	if err != nil || !done || len(r.body) != len(body) {
		t.Fatalf("done %v err %v body %d bytes, want the whole 100000", done, err, len(r.body))
	}
}

// FuzzParseResponse: whatever a server sends, the parser never panics, never claims more bytes
// than it got, and a complete response's body lies within them (or in the chunk scratch).
func FuzzParseResponse(f *testing.F) {
	f.Add([]byte("HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhello"))
	f.Add([]byte("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n0\r\nX-T: 1\r\n\r\n"))
	f.Add([]byte("HTTP/1.0 204 No Content\r\nConnection: close\r\n\r\n"))
	f.Fuzz(func(t *testing.T, in []byte) {
		var scratch []byte
		r, total, err := parseResponse(in, &scratch)
		if err != nil {
			return
		}
		if total < 0 || total > len(in) {
			t.Fatalf("response of %d bytes from %d", total, len(in))
		}
		if total > 0 && (r.status < 100 || r.status > 999 || len(r.body) > total) {
			t.Fatalf("status %d body %d bytes from a response of %d", r.status, len(r.body), total)
		}
	})
}
