package serverkit

import (
	"bufio"
	"errors"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"
)

// TestHTTPServerClosesIdleConnections: a keep-alive connection that sends one request and then
// nothing is closed by the server (here after a short IdleTimeout), and the default is not
// "never", which let idle connections pile up without end.
func TestHTTPServerClosesIdleConnections(t *testing.T) {
	if d := (HTTPOptions{}).WithDefaults().IdleTimeout; d != DefaultIdleTimeout || d <= 0 {
		t.Fatalf("default IdleTimeout %v, want %v", d, DefaultIdleTimeout)
	}
	srv := NewHTTPServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "ok") }),
		HTTPOptions{IdleTimeout: 200 * time.Millisecond}.WithDefaults())
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go srv.Serve(ln)
	defer srv.srv.Close()
	c, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	io.WriteString(c, "GET / HTTP/1.1\r\nHost: x\r\n\r\n")
	br := bufio.NewReader(c)
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		t.Fatal(err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if resp.Header.Get("Connection") == "close" {
		t.Fatal("the server did not keep the connection alive")
	}
	// Nothing more is sent: the server must close the connection (the deadline only bounds
	// how long the test waits for that).
	c.SetReadDeadline(time.Now().Add(30 * time.Second))
	_, err = br.ReadByte()
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		t.Fatal("the idle connection was still open after 30 s")
	}
	if err != io.EOF && !strings.Contains(err.Error(), "reset") {
		t.Fatalf("read after idling: %v, want EOF", err)
	}
}
