package prom_test

import (
	"bufio"
	"context"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/protobench/protobench/internal/prom"
	"github.com/protobench/protobench/internal/prom/promtest"
)

// silentPrometheus accepts connections and reads requests but never answers, as a paused
// Prometheus does (its kernel still accepts); it keeps the path of every request it read.
type silentPrometheus struct {
	ln    net.Listener
	mu    sync.Mutex
	paths []string
	conns []net.Conn
}

func newSilentPrometheus(t *testing.T) *silentPrometheus {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := &silentPrometheus{ln: ln}
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			s.mu.Lock()
			s.conns = append(s.conns, c)
			s.mu.Unlock()
			go func() {
				r := bufio.NewReader(c)
				for {
					req, err := http.ReadRequest(r)
					if err != nil {
						return
					}
					s.mu.Lock()
					s.paths = append(s.paths, req.URL.Path)
					s.mu.Unlock()
				}
			}()
		}
	}()
	t.Cleanup(s.close)
	return s
}

func (s *silentPrometheus) close() {
	s.ln.Close()
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, c := range s.conns {
		c.Close()
	}
}

func (s *silentPrometheus) seen() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.paths...)
}

// TestQueriesFailFastWhilePrometheusIsDown: once a query has gone unanswered, the next ones only
// probe readiness, and fail without sending the query, until Prometheus answers again; then the
// same client queries as before.
func TestQueriesFailFastWhilePrometheusIsDown(t *testing.T) {
	silent := newSilentPrometheus(t)
	addr := silent.ln.Addr().String()
	c := prom.New("http://" + addr)
	c.HTTP.Timeout = 2 * time.Second // the client's own timeout, shortened for the test
	ctx := context.Background()

	if _, err := c.Query(ctx, "up", time.Time{}); err == nil {
		t.Fatal("a query to a Prometheus that does not answer succeeded")
	}
	for i := 0; i < 3; i++ {
		_, err := c.Query(ctx, "up", time.Time{})
		if err == nil || !strings.Contains(err.Error(), "not answering") {
			t.Fatalf("query %d while down: %v, want an error saying Prometheus is not answering", i+2, err)
		}
	}
	if _, err := c.QueryRange(ctx, "up", time.Now().Add(-time.Minute), time.Now(), time.Second); err == nil {
		t.Fatal("a range query while down succeeded")
	}
	want := []string{"/api/v1/query", "/-/ready", "/-/ready", "/-/ready", "/-/ready"}
	if got := silent.seen(); strings.Join(got, " ") != strings.Join(want, " ") {
		t.Errorf("requests sent: %v, want %v (one query, then readiness probes only)", got, want)
	}

	// Prometheus comes back on the same address: the next query probes, finds it ready, and runs.
	silent.close()
	promtest.Start(t, addr, "")
	s, err := c.Query(ctx, "vector(1)", time.Time{})
	if err != nil || len(s) != 1 || s[0].Value != 1 {
		t.Fatalf("after Prometheus came back: %v, %v", s, err)
	}
}
