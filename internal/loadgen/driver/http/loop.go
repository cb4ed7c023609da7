package httpdriver

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/protobench/protobench/internal/loadgen"
	"github.com/protobench/protobench/internal/loadgen/netloop"
)

// Multiplexes implements loadgen.Multiplexer: the closed model runs on event loops (where epoll
// exists); the open model on paced workers.
func (Driver) Multiplexes(cfg *loadgen.Config) bool { return multiplexed(cfg) }

func multiplexed(cfg *loadgen.Config) bool { return !cfg.Open() && netloop.Supported }

// rawSock is one socket of an event loop.
type rawSock struct {
	fd    int
	c     *conn
	rb    respBuffer
	out   []byte // request bytes still to write
	busy  bool
	t     loadgen.Ticket
	start time.Time
}

func (c *conn) Close() error {
	for _, s := range c.socks {
		if s.fd >= 0 {
			_ = netloop.Close(s.fd)
			s.fd = -1
		}
	}
	return nil
}

// dialSockets opens n sockets to the target.
func (c *conn) dialSockets(ctx context.Context, n int) error {
	for i := 0; i < n; i++ {
		fd, err := netloop.Dial(ctx, c.addr)
		if err != nil {
			_ = c.Close()
			return err
		}
		c.socks = append(c.socks, &rawSock{fd: fd, c: c})
	}
	return nil
}

// loop is one event loop: a group of sockets, one epoll set, one goroutine.
type loop struct {
	poll    *netloop.Poller
	p       *loadgen.Pipe
	byFD    map[int]*rawSock
	over    bool // the schedule has no more tickets
	busy    int
	timeout time.Duration // connect timeout, for replacing lost sockets
	ready   []*rawSock    // answered sockets whose next request goes out after this round
}

// Serve implements loadgen.Multiplexer: one event loop over every socket of conns. Each socket
// carries one request at a time. Like wrk, the loop reads every response that has arrived before
// it sends the next requests: a burst of writes wakes the server once, not once per request.
func (Driver) Serve(ctx context.Context, conns []loadgen.Conn, p *loadgen.Pipe) error {
	var socks []*rawSock
	l := &loop{p: p, byFD: map[int]*rawSock{}}
	for _, c := range conns {
		l.timeout = c.(*conn).connectTimeout
		socks = append(socks, c.(*conn).socks...)
	}
	poll, err := netloop.NewPoller(len(socks))
	if err != nil {
		return err
	}
	defer poll.Close()
	l.poll = poll
	for _, s := range socks {
		if err := l.watch(s); err != nil {
			return err
		}
	}
	l.ready = append(l.ready, socks...)
	var events []netloop.Event
	for {
		if ctx.Err() != nil {
			for _, s := range socks {
				if s.busy {
					s.busy = false
					p.Abandon(s.t)
				}
			}
			return nil
		}
		if len(l.ready) > 0 {
			now := p.Now()
			for _, s := range l.ready {
				if err := l.next(s, now); err != nil {
					if err := l.lost(ctx, s, err); err != nil {
						return err
					}
				}
			}
			l.ready = l.ready[:0]
		}
		if l.over && l.busy == 0 {
			return nil
		}
		events, err = poll.Wait(events[:0])
		if err != nil {
			return err
		}
		for _, ev := range events {
			s := l.byFD[ev.FD]
			if s == nil {
				continue
			}
			if ev.Writable && len(s.out) > 0 {
				if err := l.flush(s); err != nil {
					if err := l.lost(ctx, s, err); err != nil {
						return err
					}
					continue
				}
			}
			if ev.Readable {
				if err := l.readable(ctx, s); err != nil {
					return err
				}
			}
		}
	}
}

func (l *loop) watch(s *rawSock) error {
	l.byFD[s.fd] = s
	return l.poll.Add(s.fd)
}

// next sends the socket's next request, if the schedule has one.
func (l *loop) next(s *rawSock, now time.Time) error {
	if l.over {
		return nil
	}
	t, ok := l.p.Claim(now)
	if !ok {
		l.over = true
		return nil
	}
	s.t, s.start, s.busy = t, now, true
	l.busy++
	s.out = s.c.req
	return l.flush(s)
}

// flush writes what is left of the request, and watches for writability until it is all out.
func (l *loop) flush(s *rawSock) error {
	wasPending := len(s.out) > 0 && len(s.out) < len(s.c.req)
	for len(s.out) > 0 {
		n, err := netloop.Write(s.fd, s.out)
		if n > 0 {
			s.c.wire.Sent.Add(int64(n))
			s.out = s.out[n:]
		}
		if err != nil {
			if netloop.IsAgain(err) {
				if !wasPending {
					return l.poll.WatchOutput(s.fd, true)
				}
				return nil
			}
			return err
		}
	}
	if wasPending {
		return l.poll.WatchOutput(s.fd, false)
	}
	return nil
}

// readable reads what has arrived and completes the response when it is all there.
func (l *loop) readable(ctx context.Context, s *rawSock) error {
	n, err := netloop.Read(s.fd, s.rb.space())
	if err != nil {
		if netloop.IsAgain(err) {
			return nil
		}
		return l.lost(ctx, s, err)
	}
	if n == 0 {
		return l.lost(ctx, s, errEOF)
	}
	s.c.wire.Received.Add(int64(n))
	s.rb.n += n
	resp, done, perr := s.rb.parse()
	if perr != nil {
		return l.lost(ctx, s, perr)
	}
	if !done {
		return nil
	}
	if !s.busy {
		return l.lost(ctx, s, fmt.Errorf("%w: a response nobody asked for", errMalformed))
	}
	s.busy = false
	l.busy--
	l.p.Done(s.t, s.start, l.p.Now(), s.c.outcome(resp))
	if resp.closeAfter {
		if err := l.reconnect(ctx, s); err != nil {
			return err
		}
	}
	l.ready = append(l.ready, s)
	return nil
}

var errEOF = errors.New("connection closed by the server")

// lost fails the socket's request, replaces the socket and carries on; it returns an error only
// when no new connection can be made.
func (l *loop) lost(ctx context.Context, s *rawSock, cause error) error {
	if s.busy {
		s.busy = false
		l.busy--
		code := loadgen.CodeConnReset
		if errors.Is(cause, errEOF) {
			code = loadgen.CodeEOF
		} else if errors.Is(cause, errMalformed) {
			code = loadgen.CodeBadResponse
		}
		l.p.Done(s.t, s.start, l.p.Now(), loadgen.ConnLost(&loadgen.CodedError{Code: code, Err: cause}))
	}
	if err := l.reconnect(ctx, s); err != nil {
		return err
	}
	l.ready = append(l.ready, s)
	return nil
}

func (l *loop) reconnect(ctx context.Context, s *rawSock) error {
	delete(l.byFD, s.fd)
	_ = netloop.Close(s.fd) // closing also removes it from the epoll set
	s.fd = -1
	s.rb.reset()
	s.out = nil
	dctx, cancel := context.WithTimeout(ctx, l.timeout)
	defer cancel()
	fd, err := netloop.Dial(dctx, s.c.addr)
	if err != nil {
		return err
	}
	s.fd = fd
	return l.watch(s)
}
