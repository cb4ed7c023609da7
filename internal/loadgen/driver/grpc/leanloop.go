package grpcdriver

import (
	"context"
	"errors"

	"google.golang.org/grpc/codes"

	"github.com/protobench/protobench/internal/loadgen"
	"github.com/protobench/protobench/internal/loadgen/netloop"
)

// Serve implements loadgen.Multiplexer: one event loop over a group of lean connections. Each
// round it opens as many calls as the connections' slots, the server's stream limit and flow
// control allow, writes each connection's frames in one system call, then handles what arrived.
func (Driver) Serve(ctx context.Context, conns []loadgen.Conn, p *loadgen.Pipe) error {
	lc := make([]*leanConn, len(conns))
	for i, c := range conns {
		lc[i] = c.(*leanConn)
	}
	poll, err := netloop.NewPoller(len(lc))
	if err != nil {
		return err
	}
	defer poll.Close()
	byFD := map[int]*leanConn{}
	for _, c := range lc {
		if err := poll.Add(c.fd); err != nil {
			return err
		}
		byFD[c.fd] = c
	}
	// replace fails a lost connection's calls and connects again within the connect timeout.
	replace := func(c *leanConn, cause error) error {
		now := p.Now()
		code := loadgen.Classify(cause)
		switch {
		case errors.Is(cause, errClosedByServer):
			code = loadgen.CodeEOF
		case errors.Is(cause, errProtocol):
			code = "grpc:" + codes.Internal.String()
		}
		lost := loadgen.ConnLost(&loadgen.CodedError{Code: code, Err: cause})
		for _, s := range c.finished {
			p.Done(s.t, s.start, now, c.outcome(s))
		}
		c.finished = c.finished[:0]
		for id, s := range c.streams {
			p.Done(s.t, s.start, now, lost)
			delete(c.streams, id)
		}
		delete(byFD, c.fd)
		_ = c.Close()
		rctx, cancel := context.WithTimeout(ctx, c.cfg.ConnectTimeout)
		defer cancel()
		if err := c.connect(rctx); err != nil {
			return err
		}
		byFD[c.fd] = c
		return poll.Add(c.fd)
	}
	over := false
	var events []netloop.Event
	for {
		if ctx.Err() != nil {
			for _, c := range lc {
				for id, s := range c.streams {
					p.Abandon(s.t)
					delete(c.streams, id)
				}
			}
			return nil
		}
		now := p.Now()
		inflight := 0
		for _, c := range lc {
			if c.goingAway && len(c.streams) == 0 {
				if err := replace(c, errGoingAway); err != nil {
					return err
				}
			}
			for !over && c.canOpen() {
				t, ok := p.Claim(now)
				if !ok {
					over = true
					break
				}
				c.open(t, now)
			}
			if len(c.out) > 0 {
				if err := c.flushOnce(); err != nil {
					if err := replace(c, err); err != nil {
						return err
					}
					continue
				}
			}
			if want := len(c.out) > 0; want != c.watchOut {
				if err := poll.WatchOutput(c.fd, want); err != nil {
					return err
				}
				c.watchOut = want
			}
			inflight += len(c.streams)
		}
		if over && inflight == 0 {
			return nil
		}
		events, err = poll.Wait(events[:0])
		if err != nil {
			return err
		}
		for _, ev := range events {
			c := byFD[ev.FD]
			if c == nil || !ev.Readable {
				continue // writes are made at the top of the round
			}
			err := c.readOnce()
			if err == nil {
				err = c.frames()
			} else if netloop.IsAgain(err) {
				err = nil
			}
			if err != nil {
				if err := replace(c, err); err != nil {
					return err
				}
				continue
			}
			if len(c.finished) > 0 {
				end := p.Now()
				for _, s := range c.finished {
					p.Done(s.t, s.start, end, c.outcome(s))
					c.free = append(c.free, s)
				}
				c.finished = c.finished[:0]
			}
		}
	}
}

var errGoingAway = loadgen.ProtocolError("grpc:"+codes.Unavailable.String(), errorString("the server is going away (GOAWAY)"))

type errorString string

func (e errorString) Error() string { return string(e) }
