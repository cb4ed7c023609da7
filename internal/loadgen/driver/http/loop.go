package httpdriver

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/protobench/protobench/internal/loadgen"
	"github.com/protobench/protobench/internal/loadgen/netloop"
	"github.com/protobench/protobench/internal/wire/h2wire"
)

// Multiplexes implements loadgen.Multiplexer: both models run on event loops (where epoll
// exists), unless --http-client std or the run churns in the open model (the churn loop does
// not pace).
func (d Driver) Multiplexes(cfg *loadgen.Config) bool { return d.multiplexed(cfg) }

func (d Driver) multiplexed(cfg *loadgen.Config) bool {
	if (cfg.Open() && cfg.Churns()) || !netloop.Supported || cfg.Options[optClient] == ClientStd {
		return false
	}
	if http2(cfg) {
		// The lean HTTP/2 client sends a body in one DATA frame; net/http's sends larger ones.
		r, err := d.build(cfg)
		return err == nil && len(r.body) <= h2wire.DefaultFrameSize
	}
	return true
}

// Serve implements loadgen.Multiplexer: one netloop event loop over every socket of conns (for
// HTTP/2, every connection). An HTTP/1.1 socket carries one request at a time.
func (Driver) Serve(ctx context.Context, conns []loadgen.Conn, p *loadgen.Pipe) error {
	var sessions []netloop.Session
	for _, c := range conns {
		sessions = append(sessions, c.(*conn).sessions...)
	}
	return netloop.Serve(ctx, sessions, p, netloop.Options{})
}

// rawSock is one HTTP/1.1 socket of an event loop: a netloop.Session with one slot.
type rawSock struct {
	c       *conn
	sock    *netloop.Conn
	scratch []byte // decoded chunked body
	busy    bool
	t       loadgen.Ticket
	start   time.Time
}

func (c *conn) Close() error {
	for _, s := range c.sessions {
		_ = s.Conn().Close()
	}
	if c.client != nil {
		// net/http's HTTP/2 connection, idle once its workers are done.
		c.client.CloseIdleConnections()
	}
	c.pending.Close()
	return nil
}

// dialSockets opens n HTTP/1.1 sockets to the target.
func (c *conn) dialSockets(ctx context.Context, n int) error {
	for i := 0; i < n; i++ {
		s := &rawSock{c: c, sock: netloop.NewConn(c.wire)}
		s.sock.TLS = c.cfg.TLS
		if err := s.Connect(ctx); err != nil {
			_ = c.Close()
			return err
		}
		c.sessions = append(c.sessions, s)
	}
	return nil
}

// Conn implements netloop.Session.
func (s *rawSock) Conn() *netloop.Conn { return s.sock }

// Connect implements netloop.Session.
func (s *rawSock) Connect(ctx context.Context) error {
	s.busy = false
	return s.sock.Dial(ctx, s.c.addr)
}

// Opening implements netloop.Opener: HTTP/1.1 says nothing before its request.
func (s *rawSock) Opening() error {
	s.busy = false
	return nil
}

// Opened implements netloop.Opener.
func (s *rawSock) Opened() (bool, error) { return true, nil }

// Room implements netloop.Session.
func (s *rawSock) Room() int {
	if s.busy {
		return 0
	}
	return 1
}

// Inflight implements netloop.Session.
func (s *rawSock) Inflight() int {
	if s.busy {
		return 1
	}
	return 0
}

// Send implements netloop.Session.
func (s *rawSock) Send(t loadgen.Ticket, now time.Time) error {
	s.t, s.start, s.busy = t, now, true
	s.sock.Out = append(s.sock.Out, s.c.req...)
	return nil
}

// errCloseAfter asks the loop for a new socket after a response that ends the connection.
var errCloseAfter = errors.New("the server closes the connection after its response")

// Received implements netloop.Session: a complete response ends the request.
func (s *rawSock) Received(p *loadgen.Pipe) error {
	resp, total, err := parseResponse(s.sock.In[:s.sock.N], &s.scratch)
	if err != nil || total == 0 {
		return err
	}
	if total != s.sock.N {
		// A server that answers one request at a time sends nothing after it.
		return fmt.Errorf("%w: %d bytes after the response", errMalformed, s.sock.N-total)
	}
	if !s.busy {
		return fmt.Errorf("%w: a response nobody asked for", errMalformed)
	}
	s.busy = false
	p.Done(s.t, s.start, p.Now(), s.c.outcome(resp.status, resp.gzip, resp.body))
	s.sock.N = 0
	if resp.closeAfter {
		return errCloseAfter
	}
	return nil
}

// Fail implements netloop.Session.
func (s *rawSock) Fail(p *loadgen.Pipe, now time.Time, cause error) {
	if s.busy {
		s.busy = false
		p.Done(s.t, s.start, now, loadgen.ConnLost(&loadgen.CodedError{Code: netloop.LostCode(cause, errMalformed), Err: cause}))
	}
}

// Abandon implements netloop.Session.
func (s *rawSock) Abandon(p *loadgen.Pipe) {
	if s.busy {
		s.busy = false
		p.Abandon(s.t)
	}
}
