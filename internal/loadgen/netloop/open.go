package netloop

import (
	"context"
	"time"

	"github.com/protobench/protobench/internal/loadgen"
)

// The open model on an event loop. Requests arrive on the schedule whatever the server does:
// the loop holds the next claimed ticket, sleeps on a timerfd until its intended time (as well
// as on the sockets), and sends it then on a connection with room. Replies are read the moment
// epoll reports them, whenever that is, so a reply never waits for the next send on its
// connection. A ticket that finds no connection with room (every HTTP/1.1 socket busy, every
// stream of every HTTP/2 connection open) waits, and the loop claims no more until it is sent:
// the tickets after it keep their intended times (ticket n is due at start + Due(n) whenever it
// is claimed), so every wait is in the latency and the scheduler lag, never hidden; the other
// loops, with room of their own, claim and send them meanwhile; and what is still unclaimed at
// the schedule's end is counted unsent by the engine, as on the library paths, rather than sent
// late.

// openLoop is one loop's open-model state.
type openLoop struct {
	*loop
	sessions []Session
	limit    int            // most requests in flight on this loop (Pipe.Depth)
	next     loadgen.Ticket // claimed, not yet sent
	haveNext bool
	armed    time.Time // the intended time the timer is set for
	rr       int       // where the search for a session with room starts
}

// serveOpen is Serve in the open model.
func serveOpen(ctx context.Context, sessions []Session, p *loadgen.Pipe, opts Options) error {
	l := &loop{p: p, byFD: map[int]Session{}, timeout: p.Config().ConnectTimeout}
	poll, err := NewPoller(len(sessions) + 1)
	if err != nil {
		return err
	}
	defer poll.Close()
	l.poll = poll
	timer, err := NewTimer()
	if err != nil {
		return err
	}
	defer timer.Close()
	if err := poll.Add(timer.FD); err != nil {
		return err
	}
	for _, s := range sessions {
		if err := l.watch(s); err != nil {
			return err
		}
	}
	o := &openLoop{loop: l, sessions: sessions, limit: p.Depth}
	l.due = append(l.due, sessions...)
	lastExpire := p.Now()
	var events []Event
	for {
		if ctx.Err() != nil {
			o.abandon()
			return nil
		}
		if err := o.sendDue(ctx, p.Now()); err != nil {
			return err
		}
		if l.over && !o.haveNext && l.inflight(sessions) == 0 {
			return nil
		}
		// A held ticket already due waits for room, which a reply brings: only a future one
		// needs the timer.
		if now := p.Now(); o.haveNext && o.next.Intended.After(now) && !o.next.Intended.Equal(o.armed) {
			if err := timer.Arm(o.next.Intended.Sub(now)); err != nil {
				return err
			}
			o.armed = o.next.Intended
		}
		if events, err = poll.Block(events[:0], o.waitMs(p.Now())); err != nil {
			return err
		}
		if len(events) > 0 && len(events) < len(l.byFD) {
			// As Serve does: sockets whose replies arrived meanwhile join this round.
			if events, err = poll.Poll(events[:0]); err != nil {
				return err
			}
		}
		for _, ev := range events {
			if ev.FD == timer.FD {
				timer.Drain()
				continue
			}
			if err := o.handle(ctx, ev); err != nil {
				return err
			}
		}
		if opts.ExpireEvery > 0 {
			if now := p.Now(); now.Sub(lastExpire) >= opts.ExpireEvery {
				lastExpire = now
				for _, s := range sessions {
					if e, ok := s.(Expirer); ok {
						e.Expire(p, now)
					}
				}
			}
		}
	}
}

// maxBlockMs bounds a wait with nothing due, so that the end of the run (ctx) is seen in time.
const maxBlockMs = 10

// waitMs is how long the loop may wait for its sockets: until just past the next ticket's time
// (the timer wakes it on time; epoll_wait's own timeout counts whole milliseconds), at most
// maxBlockMs. A held ticket already due is waiting for room, which only a reply can bring.
func (o *openLoop) waitMs(now time.Time) int {
	d := o.next.Intended.Sub(now)
	if !o.haveNext || d <= 0 {
		return maxBlockMs
	}
	return min(int(d/time.Millisecond)+1, maxBlockMs)
}

// sendDue sends the held ticket and those after it while they are due and a session has room,
// then writes every session that has output (requests, or a protocol's answers such as HTTP/2
// WINDOW_UPDATEs).
func (o *openLoop) sendDue(ctx context.Context, now time.Time) error {
	o.claim(now)
	if o.haveNext && !o.next.Intended.After(now) {
		room := o.limit - o.inflight(o.sessions)
		for ; room > 0 && o.haveNext && !o.next.Intended.After(now); room-- {
			s := o.withRoom()
			if s == nil {
				break
			}
			if err := s.Send(o.next, now); err != nil {
				return err
			}
			o.markDue(s)
			o.haveNext = false
			o.claim(now)
		}
	}
	due := o.due
	o.due = nil
	for _, s := range due {
		c := s.Conn()
		c.due = false
		if c.FD >= 0 && c.Pending() {
			if err := o.flush(s); err != nil {
				if err := o.replace(ctx, s, err); err != nil {
					return err
				}
			}
		}
	}
	if o.due == nil {
		o.due = due[:0]
	}
	return nil
}

// claim takes the next ticket when none is held and the schedule has more.
func (o *openLoop) claim(now time.Time) {
	if o.haveNext || o.over {
		return
	}
	if t, ok := o.p.Claim(now); ok {
		o.next, o.haveNext = t, true
	} else {
		o.over = true
	}
}

// withRoom returns the next session, round robin, that may take a request now, or nil.
func (o *openLoop) withRoom() Session {
	n := len(o.sessions)
	for i := 0; i < n; i++ {
		s := o.sessions[(o.rr+i)%n]
		if s.Room() > 0 {
			o.rr = (o.rr + i + 1) % n
			return s
		}
	}
	return nil
}

// handle serves one socket event: output it can take, replies that arrived.
func (o *openLoop) handle(ctx context.Context, ev Event) error {
	s := o.byFD[ev.FD]
	if s == nil {
		return nil
	}
	c := s.Conn()
	if ev.Writable && c.Pending() {
		if err := o.flush(s); err != nil {
			return o.replace(ctx, s, err)
		}
	}
	if !ev.Readable {
		return nil
	}
	err := c.ReadOnce()
	if err == nil {
		err = s.Received(o.p)
	} else if IsAgain(err) {
		err = nil
	}
	if err != nil {
		return o.replace(ctx, s, err)
	}
	o.markDue(s) // a reply may have left output behind it (acknowledgements, window updates)
	return nil
}

// abandon ends the run: requests in flight are abandoned, the held ticket is counted unsent.
func (o *openLoop) abandon() {
	for _, s := range o.sessions {
		s.Abandon(o.p)
	}
	if o.haveNext {
		o.p.Unsent(o.next)
		o.haveNext = false
	}
}
