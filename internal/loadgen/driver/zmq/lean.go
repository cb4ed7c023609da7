package zmqdriver

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"time"

	"github.com/protobench/protobench/internal/loadgen"
	"github.com/protobench/protobench/internal/loadgen/netloop"
	"github.com/protobench/protobench/internal/wire/zmqwire"
)

// The lean DEALER speaks ZMTP 3.0 (https://rfc.zeromq.org/spec/23/) itself for the dealer
// pattern in the closed model. Through libzmq every frame of every message is a cgo call (four
// to send a request, eight to receive a reply), which made the client cost about as much per
// request as the server it measures. On the wire a DEALER is simple: a greeting, a READY command,
// then length-prefixed frames; the lean client writes every request that is due in one system
// call per connection and parses replies in place, served by event loops
// (loadgen.Multiplexer). --zmq-client libzmq selects libzmq instead.

// Option values of --zmq-client.
const (
	ClientLean   = "lean"
	ClientLibzmq = "libzmq"
)

// ZMTP framing.
const (
	zmtpMore    = 0x01
	zmtpLong    = 0x02
	zmtpCommand = 0x04
	greetingLen = 64
)

// Multiplexes implements loadgen.Multiplexer.
func (Driver) Multiplexes(cfg *loadgen.Config) bool {
	return !cfg.Open() && netloop.Supported && cfg.Pattern == PatternDealer && cfg.Options["zmq_client"] != ClientLibzmq
}

// greeting is ZMTP 3.0 with the NULL mechanism, as a client.
func greeting() []byte {
	g := make([]byte, greetingLen)
	g[0], g[9] = 0xFF, 0x7F
	g[10], g[11] = 3, 0
	copy(g[12:], "NULL")
	return g
}

// readyCommand is the NULL handshake's READY with our socket type.
func readyCommand(socketType string) []byte {
	var body []byte
	body = append(body, 5)
	body = append(body, "READY"...)
	for _, p := range [][2]string{{"Socket-Type", socketType}, {"Identity", ""}} {
		body = append(body, byte(len(p[0])))
		body = append(body, p[0]...)
		body = binary.BigEndian.AppendUint32(body, uint32(len(p[1])))
		body = append(body, p[1]...)
	}
	return appendZMTPFrame(nil, zmtpCommand, body)
}

func appendZMTPFrame(b []byte, flags byte, body []byte) []byte {
	if len(body) > 255 {
		b = append(b, flags|zmtpLong)
		b = binary.BigEndian.AppendUint64(b, uint64(len(body)))
	} else {
		b = append(b, flags, byte(len(body)))
	}
	return append(b, body...)
}

// leanDealer is one ZMTP connection to the ROUTER.
type leanDealer struct {
	cfg   *loadgen.Config
	wire  *loadgen.WireBytes
	slots int
	req   request
	// prefix is the request's first two frames ([empty][method]) and the id frame's header;
	// suffix is the body frame. Only the id changes between requests.
	prefix []byte
	suffix []byte

	fd       int
	out      []byte
	watchOut bool
	in       []byte
	inN      int
	nextID   uint64
	inflight map[uint64]pending
	frames   [][]byte // frames of the reply being assembled (slices of in, valid until compaction)
	ready    bool     // the server's READY arrived
}

func (c *leanDealer) NewWorker(context.Context) (loadgen.Worker, error) {
	return nil, errors.New("zmq lean connections are served by event loops")
}

func (c *leanDealer) Close() error {
	if c.fd >= 0 {
		_ = netloop.Close(c.fd)
		c.fd = -1
	}
	return nil
}

func dialLeanDealer(ctx context.Context, cfg *loadgen.Config, wire *loadgen.WireBytes) (*leanDealer, error) {
	req, err := buildRequest(cfg)
	if err != nil {
		return nil, err
	}
	c := &leanDealer{cfg: cfg, wire: wire, slots: cfg.Concurrency, req: req, fd: -1, inflight: map[uint64]pending{}}
	c.prefix = appendZMTPFrame(nil, zmtpMore, nil)
	c.prefix = appendZMTPFrame(c.prefix, zmtpMore, req.method)
	c.prefix = append(c.prefix, zmtpMore, zmqwire.IDBytes)
	c.suffix = appendZMTPFrame(nil, 0, req.body)
	return c, c.connect(ctx)
}

// connect opens the connection and completes the ZMTP handshake within ctx.
func (c *leanDealer) connect(ctx context.Context) error {
	addr := c.cfg.Target.Address
	fd, err := netloop.Dial(ctx, addr)
	if err != nil {
		return err
	}
	c.fd, c.inN, c.ready, c.watchOut = fd, 0, false, false
	c.out = append(append(c.out[:0], greeting()...), readyCommand("DEALER")...)
	if c.in == nil {
		c.in = make([]byte, 64<<10)
	}
	for len(c.out) > 0 {
		if err := c.flushOnce(); err != nil {
			return c.handshakeError(err)
		}
		if len(c.out) > 0 {
			if err := netloop.WaitFD(ctx, c.fd, netloop.PollOut); err != nil {
				return c.handshakeError(err)
			}
		}
	}
	greeted := false
	for !c.ready {
		if err := netloop.WaitFD(ctx, c.fd, netloop.PollIn); err != nil {
			return c.handshakeError(fmt.Errorf("no ZMTP handshake from the server: %w", err))
		}
		if err := c.readOnce(); err != nil && !netloop.IsAgain(err) {
			return c.handshakeError(err)
		}
		if !greeted {
			if c.inN < greetingLen {
				continue
			}
			g := c.in[:greetingLen]
			if g[0] != 0xFF || g[9] != 0x7F || g[10] < 3 || !bytes.HasPrefix(g[12:32], []byte("NULL")) {
				return c.handshakeError(fmt.Errorf("not a ZMTP 3 NULL-mechanism peer (greeting % x)", g[:12]))
			}
			c.inN = copy(c.in, c.in[greetingLen:c.inN])
			greeted = true
		}
		if _, err := c.parse(nil); err != nil {
			return c.handshakeError(err)
		}
	}
	return nil
}

func (c *leanDealer) handshakeError(err error) error {
	_ = c.Close()
	return &loadgen.DialError{Address: c.cfg.Target.Address, Err: fmt.Errorf("ZeroMQ connection not established: %w", err)}
}

func (c *leanDealer) flushOnce() error {
	for len(c.out) > 0 {
		n, err := netloop.Write(c.fd, c.out)
		if n > 0 {
			c.wire.Sent.Add(int64(n))
			c.out = c.out[:copy(c.out, c.out[n:])]
		}
		if err != nil {
			if netloop.IsAgain(err) {
				return nil
			}
			return err
		}
	}
	return nil
}

var errZMTPClosed = errors.New("connection closed by the server")

func (c *leanDealer) readOnce() error {
	if c.inN == len(c.in) {
		c.in = append(c.in, make([]byte, len(c.in))...)
	}
	n, err := netloop.Read(c.fd, c.in[c.inN:])
	if err != nil {
		return err
	}
	if n == 0 {
		return errZMTPClosed
	}
	c.wire.Received.Add(int64(n))
	c.inN += n
	return nil
}

// send appends one request to the output.
func (c *leanDealer) send(t loadgen.Ticket, now time.Time) {
	c.nextID++
	c.out = append(c.out, c.prefix...)
	c.out = binary.BigEndian.AppendUint64(c.out, c.nextID)
	c.out = append(c.out, c.suffix...)
	c.inflight[c.nextID] = pending{t: t, start: now}
}

var errZMTP = errors.New("ZMTP protocol error")

// reply is a complete reply taken off the connection.
type reply struct {
	p   pending
	err error
}

// parse takes every complete frame from the input; complete replies to requests in flight are
// appended to dst. Commands (the server's READY) are handled here.
func (c *leanDealer) parse(dst []reply) ([]reply, error) {
	pos := 0
	c.frames = c.frames[:0]
	msgStart := 0
	for {
		if c.inN-pos < 2 {
			break
		}
		flags := c.in[pos]
		hdr, size := 2, int(c.in[pos+1])
		if flags&zmtpLong != 0 {
			if c.inN-pos < 9 {
				break
			}
			hdr = 9
			s := binary.BigEndian.Uint64(c.in[pos+1 : pos+9])
			if s > 1<<31 {
				return dst, fmt.Errorf("%w: frame of %d bytes", errZMTP, s)
			}
			size = int(s)
		}
		if c.inN-pos < hdr+size {
			break
		}
		body := c.in[pos+hdr : pos+hdr+size]
		pos += hdr + size
		if flags&zmtpCommand != 0 {
			if err := c.command(body); err != nil {
				return dst, err
			}
			msgStart = pos
			continue
		}
		c.frames = append(c.frames, body)
		if flags&zmtpMore != 0 {
			continue
		}
		// A whole message: [empty][status][id][body].
		msgStart = pos
		rep, err := zmqwire.DecodeReply(c.frames)
		c.frames = c.frames[:0]
		if err != nil {
			return dst, fmt.Errorf("%w: %v", errZMTP, err)
		}
		p, ok := c.inflight[rep.ID]
		if !ok {
			continue // a reply to a request already timed out
		}
		delete(c.inflight, rep.ID)
		dst = append(dst, reply{p: p, err: c.req.replyError(rep)})
	}
	// Keep the unparsed tail, including the frames of a message not yet complete.
	c.frames = c.frames[:0]
	c.inN = copy(c.in, c.in[msgStart:c.inN])
	return dst, nil
}

// command handles a ZMTP command: READY (checked for a ROUTER peer), PING (answered), others
// ignored.
func (c *leanDealer) command(body []byte) error {
	if len(body) < 1 || len(body) < 1+int(body[0]) {
		return fmt.Errorf("%w: short command", errZMTP)
	}
	name := string(body[1 : 1+int(body[0])])
	switch name {
	case "READY":
		if !bytes.Contains(body, []byte("ROUTER")) {
			return fmt.Errorf("%w: the peer is not a ROUTER socket", errZMTP)
		}
		c.ready = true
	case "PING":
		// ZMTP 3.1 heartbeat: PONG carries the ping's context (after the 2-byte TTL).
		ctx := []byte{}
		if rest := body[1+len(name):]; len(rest) > 2 {
			ctx = rest[2:]
		}
		pong := append([]byte{4}, "PONG"...)
		c.out = appendZMTPFrame(c.out, zmtpCommand, append(pong, ctx...))
	}
	return nil
}

// Serve implements loadgen.Multiplexer: one event loop over a group of lean DEALER connections,
// each keeping Concurrency requests in flight.
func (Driver) Serve(ctx context.Context, conns []loadgen.Conn, p *loadgen.Pipe) error {
	dc := make([]*leanDealer, len(conns))
	for i, c := range conns {
		dc[i] = c.(*leanDealer)
	}
	poll, err := netloop.NewPoller(len(dc))
	if err != nil {
		return err
	}
	defer poll.Close()
	byFD := map[int]*leanDealer{}
	for _, c := range dc {
		if err := poll.Add(c.fd); err != nil {
			return err
		}
		byFD[c.fd] = c
	}
	timeout := requestTimeout(p.Config())
	replace := func(c *leanDealer, cause error) error {
		now := p.Now()
		code := loadgen.CodeConnReset
		switch {
		case errors.Is(cause, errZMTPClosed):
			code = loadgen.CodeEOF
		case errors.Is(cause, errZMTP):
			code = loadgen.CodeBadResponse
		}
		lost := loadgen.ConnLost(&loadgen.CodedError{Code: code, Err: cause})
		for id, pd := range c.inflight {
			p.Done(pd.t, pd.start, now, lost)
			delete(c.inflight, id)
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
	lastSweep := p.Now()
	var events []netloop.Event
	var replies []reply
	for {
		if ctx.Err() != nil {
			for _, c := range dc {
				for id, pd := range c.inflight {
					p.Abandon(pd.t)
					delete(c.inflight, id)
				}
			}
			return nil
		}
		now := p.Now()
		inflight := 0
		for _, c := range dc {
			for !over && len(c.inflight) < c.slots {
				t, ok := p.Claim(now)
				if !ok {
					over = true
					break
				}
				c.send(t, now)
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
			inflight += len(c.inflight)
		}
		if over && inflight == 0 {
			return nil
		}
		events, err = poll.Wait(events[:0])
		if err != nil {
			return err
		}
		// Replies come one at a time from a busy server; look once more for any that arrived
		// meanwhile before answering with new requests, so that requests go out in batches.
		if len(events) > 0 {
			if events, err = poll.Poll(events); err != nil {
				return err
			}
		}
		for _, ev := range events {
			c := byFD[ev.FD]
			if c == nil || !ev.Readable {
				continue
			}
			err := c.readOnce()
			if err == nil {
				replies, err = c.parse(replies[:0])
				end := p.Now()
				for _, r := range replies {
					p.Done(r.p.t, r.p.start, end, r.err)
				}
			} else if netloop.IsAgain(err) {
				err = nil
			}
			if err != nil {
				if err := replace(c, err); err != nil {
					return err
				}
			}
		}
		// A reply the server dropped at its high-water mark never comes: time it out.
		if now := p.Now(); now.Sub(lastSweep) >= pollSlice {
			lastSweep = now
			for _, c := range dc {
				for id, pd := range c.inflight {
					if now.Sub(pd.start) > timeout {
						p.Done(pd.t, pd.start, now, timeoutError(timeout))
						delete(c.inflight, id)
					}
				}
			}
		}
	}
}
