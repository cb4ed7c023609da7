package netloop

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/protobench/protobench/internal/loadgen"
)

// Churn on the event loop (--requests-per-connection N, closed model): every session is one
// connection with one request in flight, which carries N requests and is then replaced. The
// replacement never blocks the loop: the socket connects without waiting (Peer.StartConnect),
// the TLS handshake is stepped by the loop (handshake.go), and the protocol's own opening
// (HTTP/2's preface and SETTINGS) is parsed as replies are. Meanwhile the loop serves every
// other session. The request that opens a connection is claimed when the old one closes, and is
// sent once the new one is open: its latency includes the connect and the handshakes, as a
// client that connects per request sees it, and as on the library paths (loadgen/churn.go).

// Opener is a Session that can be opened by the loop rather than by Connect, which waits.
type Opener interface {
	Session
	// Opening resets the session's protocol state for a new connection whose socket (and TLS
	// handshake) the loop has completed, and appends what the client says first to Conn().Out.
	Opening() error
	// Opened parses Conn().In[:N] and reports whether the protocol's opening is complete
	// (HTTP/2: the server's SETTINGS); requests go out only then.
	Opened() (bool, error)
}

// phase is where a churning session's connection is.
type phase uint8

const (
	phaseReady      phase = iota // open: requests go out
	phaseConnecting              // TCP connect under way
	phaseTLS                     // TLS handshake under way
	phaseOpening                 // the protocol's opening under way
	phaseDone                    // closed for good: the schedule is over
)

// churnSlot is one churning session and its connection's state.
type churnSlot struct {
	s        Opener
	c        *Conn
	phase    phase
	carried  int            // requests sent on this connection
	held     loadgen.Ticket // the request that opens the next connection
	heldAt   time.Time
	holding  bool
	deadline time.Time // the connect timeout, while opening
}

type churner struct {
	p       *loadgen.Pipe
	peer    *Peer
	poll    *Poller
	perConn int
	timeout time.Duration
	slots   []*churnSlot
	byFD    map[int]*churnSlot
	due     []*churnSlot
	opening int  // slots connecting, in TLS or opening
	over    bool // the schedule has no more tickets
}

// serveChurn is Serve for a churning run.
func serveChurn(ctx context.Context, sessions []Session, p *loadgen.Pipe) error {
	cfg := p.Config()
	peer, err := Resolve(ctx, cfg.Target.Address)
	if err != nil {
		return err
	}
	poll, err := NewPoller(len(sessions))
	if err != nil {
		return err
	}
	defer poll.Close()
	ch := &churner{p: p, peer: peer, poll: poll, perConn: cfg.RequestsPerConnection, timeout: cfg.ConnectTimeout, byFD: map[int]*churnSlot{}}
	for _, s := range sessions {
		op, ok := s.(Opener)
		if !ok {
			return fmt.Errorf("netloop: a %T session cannot churn on the event loop", s)
		}
		sl := &churnSlot{s: op, c: s.Conn()}
		ch.slots = append(ch.slots, sl)
		if err := ch.watch(sl); err != nil {
			return err
		}
		ch.due = append(ch.due, sl)
	}
	defer ch.stop()
	var events []Event
	lastExpire := p.Now()
	for {
		if ctx.Err() != nil {
			ch.abandon()
			return nil
		}
		if err := ch.send(); err != nil {
			return err
		}
		if ch.over && ch.idle() {
			return nil
		}
		if events, err = poll.Wait(events[:0]); err != nil {
			return err
		}
		for _, ev := range events {
			if sl := ch.byFD[ev.FD]; sl != nil {
				if err := ch.event(sl, ev); err != nil {
					return err
				}
			}
		}
		if now := p.Now(); ch.opening > 0 && now.Sub(lastExpire) >= 10*time.Millisecond {
			lastExpire = now
			if err := ch.expire(now); err != nil {
				return err
			}
		}
	}
}

func (ch *churner) watch(sl *churnSlot) error {
	sl.c.watchOut = false
	ch.byFD[sl.c.FD] = sl
	return ch.poll.Add(sl.c.FD)
}

// send fills every due open session up to its N requests and writes its output.
func (ch *churner) send() error {
	due := ch.due
	ch.due = nil
	now := ch.p.Now()
	for _, sl := range due {
		sl.c.due = false
		if sl.phase != phaseReady {
			continue
		}
		if sl.holding {
			sl.holding = false
			sl.carried++
			if err := sl.s.Send(sl.held, sl.heldAt); err != nil {
				return err
			}
		}
		for n := sl.s.Room(); !ch.over && n > 0 && sl.carried < ch.perConn; n-- {
			t, ok := ch.p.Claim(now)
			if !ok {
				ch.over = true
				break
			}
			sl.carried++
			if err := sl.s.Send(t, now); err != nil {
				return err
			}
		}
		if err := ch.flush(sl); err != nil {
			if err := ch.lost(sl, err); err != nil {
				return err
			}
		}
	}
	if ch.due == nil {
		ch.due = due[:0]
	}
	return nil
}

func (ch *churner) markDue(sl *churnSlot) {
	if !sl.c.due {
		sl.c.due = true
		ch.due = append(ch.due, sl)
	}
}

// flush writes what the socket takes, and watches for writability while output remains (or,
// while connecting, until the connect completes).
func (ch *churner) flush(sl *churnSlot) error {
	c := sl.c
	if sl.phase != phaseConnecting {
		if err := c.Flush(); err != nil {
			return err
		}
	}
	if want := c.Pending() || sl.phase == phaseConnecting; want != c.watchOut {
		if err := ch.poll.WatchOutput(c.FD, want); err != nil {
			return err
		}
		c.watchOut = want
	}
	return nil
}

// event handles one ready socket in whichever phase its connection is.
func (ch *churner) event(sl *churnSlot, ev Event) error {
	var err error
	switch sl.phase {
	case phaseConnecting:
		err = ch.connected(sl)
	case phaseTLS:
		if ev.Writable && sl.c.Pending() {
			err = ch.flush(sl)
		}
		if err == nil && ev.Readable {
			err = ch.handshake(sl)
		}
	case phaseOpening:
		if ev.Writable && sl.c.Pending() {
			err = ch.flush(sl)
		}
		if err == nil && ev.Readable {
			if err = sl.c.ReadOnce(); err == nil || IsAgain(err) {
				err = ch.opened(sl)
			}
		}
	case phaseReady:
		return ch.ready(sl, ev)
	}
	if err != nil {
		return ch.openFailed(sl, err)
	}
	return nil
}

// ready handles a socket that carries requests: replies, then a new connection once the
// connection has carried its N and answered them all.
func (ch *churner) ready(sl *churnSlot, ev Event) error {
	c := sl.c
	if ev.Writable && c.Pending() {
		if err := ch.flush(sl); err != nil {
			return ch.lost(sl, err)
		}
	}
	if !ev.Readable {
		return nil
	}
	err := c.ReadOnce()
	if err == nil {
		err = sl.s.Received(ch.p)
	} else if IsAgain(err) {
		err = nil
	}
	if err != nil {
		return ch.lost(sl, err)
	}
	if sl.carried >= ch.perConn && sl.s.Inflight() == 0 {
		return ch.recycle(sl)
	}
	ch.markDue(sl)
	return nil
}

// lost fails the requests of a connection that broke, and replaces it as churn would.
func (ch *churner) lost(sl *churnSlot, cause error) error {
	sl.s.Fail(ch.p, ch.p.Now(), cause)
	return ch.recycle(sl)
}

// recycle closes the connection and, unless the schedule is over, claims the request that will
// open the next one and starts connecting.
func (ch *churner) recycle(sl *churnSlot) error {
	c := sl.c
	delete(ch.byFD, c.FD)
	c.abandonTLS()
	if c.FD >= 0 {
		_ = CloseReset(c.FD) // closing also removes it from the epoll set
	}
	c.FD, c.tc, c.rec = -1, nil, nil
	c.Out, c.N = c.Out[:0], 0
	sl.carried = 0
	if ch.over {
		sl.phase = phaseDone
		return nil
	}
	now := ch.p.Now()
	t, ok := ch.p.Claim(now)
	if !ok {
		ch.over, sl.phase = true, phaseDone
		return nil
	}
	sl.held, sl.heldAt, sl.holding = t, now, true
	fd, err := ch.peer.StartConnect()
	if err != nil {
		return ch.openFailed(sl, err)
	}
	c.FD, sl.phase, sl.deadline = fd, phaseConnecting, now.Add(ch.timeout)
	ch.opening++
	if err := ch.watch(sl); err != nil {
		return err
	}
	return ch.flush(sl)
}

// connected follows a connect: the TLS handshake, or the protocol's opening.
func (ch *churner) connected(sl *churnSlot) error {
	if err := ch.peer.ConnectResult(sl.c.FD); err != nil {
		return err
	}
	if sl.c.TLS == nil {
		return ch.open(sl)
	}
	sl.phase = phaseTLS
	if err := sl.c.beginTLS(); err != nil {
		return &loadgen.TLSError{Address: ch.peer.Address, Err: err}
	}
	return ch.flush(sl)
}

// handshake steps the TLS handshake with what has arrived.
func (ch *churner) handshake(sl *churnSlot) error {
	c := sl.c
	if err := c.rec.fill(); err != nil {
		if IsAgain(err) {
			return nil
		}
		return &loadgen.TLSError{Address: ch.peer.Address, Err: err}
	}
	done, err := c.stepTLS()
	if err != nil {
		return &loadgen.TLSError{Address: ch.peer.Address, Err: err}
	}
	if !done {
		return ch.flush(sl)
	}
	if err := c.decryptHeld(); err != nil {
		return err
	}
	return ch.open(sl)
}

// open starts the protocol's opening on an open (and secured) socket.
func (ch *churner) open(sl *churnSlot) error {
	sl.phase = phaseOpening
	if err := sl.s.Opening(); err != nil {
		return err
	}
	if err := ch.flush(sl); err != nil {
		return err
	}
	return ch.opened(sl)
}

// opened sends the held request once the protocol's opening is complete.
func (ch *churner) opened(sl *churnSlot) error {
	ok, err := sl.s.Opened()
	if err != nil || !ok {
		return err
	}
	sl.phase = phaseReady
	ch.opening--
	ch.markDue(sl)
	return nil
}

// openFailed ends the run on a connection that could not be opened, as a failed reconnect does
// on the library paths: the request it held is released unsent.
func (ch *churner) openFailed(sl *churnSlot, err error) error {
	c := sl.c
	if sl.phase != phaseReady && sl.phase != phaseDone {
		ch.opening--
	}
	sl.phase = phaseDone
	if sl.holding {
		sl.holding = false
		ch.p.Abandon(sl.held)
	}
	delete(ch.byFD, c.FD)
	c.abandonTLS()
	_ = c.Close()
	var de *loadgen.DialError
	var te *loadgen.TLSError
	if !errors.As(err, &de) && !errors.As(err, &te) {
		err = &loadgen.DialError{Address: ch.peer.Address, Err: err}
	}
	return fmt.Errorf("opening a new connection after %d requests failed: %w", ch.perConn, err)
}

// expire fails connections still opening after the connect timeout.
func (ch *churner) expire(now time.Time) error {
	for _, sl := range ch.slots {
		if sl.phase >= phaseConnecting && sl.phase <= phaseOpening && now.After(sl.deadline) {
			return ch.openFailed(sl, fmt.Errorf("not open within the connect timeout of %s (%s)", ch.timeout, sl.phaseName()))
		}
	}
	return nil
}

func (sl *churnSlot) phaseName() string {
	switch sl.phase {
	case phaseConnecting:
		return "TCP connect"
	case phaseTLS:
		return "TLS handshake"
	}
	return "the protocol's opening"
}

// idle reports whether nothing is in flight or held.
func (ch *churner) idle() bool {
	for _, sl := range ch.slots {
		if sl.holding || (sl.phase == phaseReady && sl.s.Inflight() > 0) {
			return false
		}
	}
	return true
}

// abandon drops every request in flight or held unrecorded (the run is over).
func (ch *churner) abandon() {
	for _, sl := range ch.slots {
		if sl.phase == phaseReady {
			sl.s.Abandon(ch.p)
		}
		if sl.holding {
			sl.holding = false
			ch.p.Abandon(sl.held)
		}
	}
}

// stop ends the handshakes still running and closes connections left half open; open ones are
// the driver's to close.
func (ch *churner) stop() {
	for _, sl := range ch.slots {
		sl.c.abandonTLS()
		if sl.phase != phaseReady && sl.c.FD >= 0 {
			_ = sl.c.Close()
		}
	}
}
