package netloop

import (
	"context"
	"errors"
	"time"

	"github.com/protobench/protobench/internal/loadgen"
)

// Session is one connection's protocol logic; Serve supplies the socket, the epoll set and the
// write batching. A session keeps its requests in flight by itself and records their ends on
// the Pipe.
type Session interface {
	// Conn is the session's socket and buffers.
	Conn() *Conn
	// Connect (re)opens the socket with Conn.Dial and completes the protocol's handshake within
	// ctx, resetting the session's state.
	Connect(ctx context.Context) error
	// Room is how many more requests may go out now.
	Room() int
	// Send appends one request to Conn.Out.
	Send(t loadgen.Ticket, now time.Time) error
	// Received handles Conn.In[:Conn.N], records the requests it completes on p, and keeps any
	// incomplete tail. An error makes Serve replace the connection (after Fail).
	Received(p *loadgen.Pipe) error
	// Inflight is how many requests await their replies.
	Inflight() int
	// Fail ends every request in flight with cause, as a lost connection.
	Fail(p *loadgen.Pipe, now time.Time, cause error)
	// Abandon drops every request in flight unrecorded (the run is over).
	Abandon(p *loadgen.Pipe)
}

// Expirer is a session whose requests may go unanswered (a ZeroMQ server drops what exceeds its
// high-water mark): Serve calls Expire every Options.ExpireEvery to time them out.
type Expirer interface {
	Expire(p *loadgen.Pipe, now time.Time)
}

// Options tune Serve.
type Options struct {
	// ExpireEvery is how often sessions that are Expirers are asked to time out their requests
	// (0: never).
	ExpireEvery time.Duration
}

// Serve is the event loop behind every lean driver (loadgen.Multiplexer.Serve): one epoll set and
// one goroutine for a group of sessions. In the open model it is serveOpen (open.go). Each round it reads every reply that has arrived, then
// lets each session that got replies (or is new) claim as many requests as it has room for and
// writes them in one system call per socket: like wrk, a burst of writes wakes the server once,
// not once per request. It returns when the schedule is over and every request has ended, when
// ctx is done (abandoning what is in flight), or with an error when a lost connection cannot be
// replaced within the connect timeout.
func Serve(ctx context.Context, sessions []Session, p *loadgen.Pipe, opts Options) error {
	if p.Config().Churns() {
		return serveChurn(ctx, sessions, p)
	}
	if p.Config().Open() {
		return serveOpen(ctx, sessions, p, opts)
	}
	l := &loop{p: p, byFD: map[int]Session{}, timeout: p.Config().ConnectTimeout}
	poll, err := NewPoller(len(sessions))
	if err != nil {
		return err
	}
	defer poll.Close()
	l.poll = poll
	for _, s := range sessions {
		if err := l.watch(s); err != nil {
			return err
		}
	}
	l.due = append(l.due, sessions...)
	lastExpire := p.Now()
	var events []Event
	for {
		if ctx.Err() != nil {
			for _, s := range sessions {
				s.Abandon(p)
			}
			return nil
		}
		if err := l.send(ctx); err != nil {
			return err
		}
		if l.over && l.inflight(sessions) == 0 {
			return nil
		}
		if events, err = l.wait(events[:0]); err != nil {
			return err
		}
		for _, ev := range events {
			if err := l.serveEvent(ctx, ev); err != nil {
				return err
			}
		}
		if opts.ExpireEvery > 0 {
			lastExpire = l.expire(sessions, lastExpire, opts.ExpireEvery)
		}
	}
}

// wait returns the sockets that are ready, in events.
func (l *loop) wait(events []Event) ([]Event, error) {
	events, err := l.poll.Wait(events)
	if err != nil {
		return events, err
	}
	if len(events) > 0 && len(events) < len(l.byFD) {
		// Replies come one at a time from a busy server; look once more for sockets whose
		// replies arrived meanwhile, so that the next requests go out in larger batches. The
		// poll is level-triggered and nothing was read yet, so it sees every socket Wait saw:
		// its answer replaces Wait's rather than listing them twice.
		return l.poll.Poll(events[:0])
	}
	return events, nil
}

// serveEvent writes what a writable socket's session has pending and hands what a readable one
// received to its session, which then has room for more requests; a connection that fails
// either way is replaced.
func (l *loop) serveEvent(ctx context.Context, ev Event) error {
	s := l.byFD[ev.FD]
	if s == nil {
		return nil
	}
	c := s.Conn()
	if ev.Writable && c.Pending() {
		if err := l.flush(s); err != nil {
			return l.replace(ctx, s, err)
		}
	}
	if !ev.Readable {
		return nil
	}
	err := c.ReadOnce()
	if err == nil {
		err = s.Received(l.p)
	} else if IsAgain(err) {
		err = nil
	}
	if err != nil {
		return l.replace(ctx, s, err)
	}
	l.markDue(s)
	return nil
}

// expire asks the sessions that are Expirers to time out their requests when the interval every
// has passed since last, and returns when it last did.
func (l *loop) expire(sessions []Session, last time.Time, every time.Duration) time.Time {
	now := l.p.Now()
	if now.Sub(last) < every {
		return last
	}
	for _, s := range sessions {
		if e, ok := s.(Expirer); ok {
			e.Expire(l.p, now)
			l.markDue(s)
		}
	}
	return now
}

type loop struct {
	p       *loadgen.Pipe
	poll    *Poller
	byFD    map[int]Session
	due     []Session // sessions that may have room or output: new, answered or replaced
	over    bool      // the schedule has no more tickets
	timeout time.Duration
}

func (l *loop) watch(s Session) error {
	c := s.Conn()
	c.watchOut, c.due = false, false
	l.byFD[c.FD] = s
	return l.poll.Add(c.FD)
}

func (l *loop) markDue(s Session) {
	if c := s.Conn(); !c.due {
		c.due = true
		l.due = append(l.due, s)
	}
}

// send fills every due session with the requests it has room for and writes its output.
func (l *loop) send(ctx context.Context) error {
	if len(l.due) == 0 {
		return nil
	}
	now := l.p.Now()
	// replace may mark sessions due again while this list is walked: take it first.
	due := l.due
	l.due = nil
	for _, s := range due {
		c := s.Conn()
		c.due = false
		for n := s.Room(); !l.over && n > 0; n-- {
			t, ok := l.p.Claim(now)
			if !ok {
				l.over = true
				break
			}
			if err := s.Send(t, now); err != nil {
				return err
			}
		}
		if c.Pending() {
			if err := l.flush(s); err != nil {
				if err := l.replace(ctx, s, err); err != nil {
					return err
				}
			}
		}
	}
	if l.due == nil {
		l.due = due[:0]
	}
	return nil
}

// flush writes what the socket takes, and watches for writability while output remains.
func (l *loop) flush(s Session) error {
	c := s.Conn()
	if err := c.Flush(); err != nil {
		return err
	}
	if want := c.Pending(); want != c.watchOut {
		if err := l.poll.WatchOutput(c.FD, want); err != nil {
			return err
		}
		c.watchOut = want
	}
	return nil
}

func (l *loop) inflight(sessions []Session) int {
	n := 0
	for _, s := range sessions {
		n += s.Inflight()
	}
	return n
}

// replace fails a lost connection's requests and connects again within the connect timeout.
func (l *loop) replace(ctx context.Context, s Session, cause error) error {
	c := s.Conn()
	s.Fail(l.p, l.p.Now(), cause)
	delete(l.byFD, c.FD)
	_ = c.Close() // closing also removes it from the epoll set
	rctx, cancel := context.WithTimeout(ctx, l.timeout)
	defer cancel()
	if err := s.Connect(rctx); err != nil {
		return err
	}
	if err := l.watch(s); err != nil {
		return err
	}
	l.markDue(s)
	return nil
}

// ErrClosed is what ReadOnce returns when the server closed the connection.
var ErrClosed = errors.New("connection closed by the server")

// LostCode is the error code of a request lost with its connection: eof when the server closed
// it, bad-response when the session could not parse what came (errors wrapping malformed), else
// connection reset.
func LostCode(cause, malformed error) string {
	switch {
	case errors.Is(cause, ErrClosed):
		return loadgen.CodeEOF
	case malformed != nil && errors.Is(cause, malformed):
		return loadgen.CodeBadResponse
	}
	return loadgen.CodeConnReset
}

// Pending is a request awaiting its reply.
type Pending struct {
	T     loadgen.Ticket
	Start time.Time
}

// Inflight holds a session's requests by the id their replies carry.
type Inflight[K comparable] map[K]Pending

// Fail ends every request with err and forgets them.
func (m Inflight[K]) Fail(p *loadgen.Pipe, now time.Time, err error) {
	for id, pd := range m {
		p.Done(pd.T, pd.Start, now, err)
		delete(m, id)
	}
}

// Abandon drops every request unrecorded.
func (m Inflight[K]) Abandon(p *loadgen.Pipe) {
	for id, pd := range m {
		p.Abandon(pd.T)
		delete(m, id)
	}
}
