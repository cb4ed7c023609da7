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
// pattern, in both models. Through libzmq every frame of every message is a cgo call (four
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
	return netloop.Supported && cfg.Pattern == PatternDealer && cfg.Options["zmq_client"] != ClientLibzmq
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
	slots int
	req   request
	// prefix is the request's first two frames ([empty][method]) and the id frame's header;
	// suffix is the body frame. Only the id changes between requests.
	prefix []byte
	suffix []byte

	conn     *netloop.Conn
	greeted  bool
	nextID   uint64
	inflight netloop.Inflight[uint64]
	frames   [][]byte // frames of the reply being assembled (slices of In, valid until compaction)
	ready    bool     // the server's READY arrived
	replies  []reply
	timeout  time.Duration
}

func (c *leanDealer) NewWorker(context.Context) (loadgen.Worker, error) {
	return nil, errors.New("zmq lean connections are served by event loops")
}

func (c *leanDealer) Close() error { return c.conn.Close() }

func dialLeanDealer(ctx context.Context, cfg *loadgen.Config, wire *loadgen.WireBytes) (*leanDealer, error) {
	req, err := buildRequest(cfg)
	if err != nil {
		return nil, err
	}
	c := &leanDealer{cfg: cfg, slots: cfg.Concurrency, req: req, conn: netloop.NewConn(wire), inflight: netloop.Inflight[uint64]{}}
	c.prefix = appendZMTPFrame(nil, zmtpMore, nil)
	c.prefix = appendZMTPFrame(c.prefix, zmtpMore, req.method)
	c.prefix = append(c.prefix, zmtpMore, zmqwire.IDBytes)
	c.suffix = appendZMTPFrame(nil, 0, req.body)
	c.timeout = requestTimeout(cfg)
	return c, c.Connect(ctx)
}

// Conn implements netloop.Session.
func (c *leanDealer) Conn() *netloop.Conn { return c.conn }

// Connect implements netloop.Session: the connection and the ZMTP handshake within ctx.
func (c *leanDealer) Connect(ctx context.Context) error {
	addr := c.cfg.Target.Address
	if err := c.conn.Dial(ctx, addr); err != nil {
		return err
	}
	c.ready, c.greeted = false, false
	c.conn.Out = append(append(c.conn.Out, greeting()...), readyCommand("DEALER")...)
	return c.conn.Handshake(ctx, addr, "ZeroMQ connection not established", func() (bool, error) {
		if !c.greeted {
			if c.conn.N < greetingLen {
				return false, nil
			}
			g := c.conn.In[:greetingLen]
			if g[0] != 0xFF || g[9] != 0x7F || g[10] < 3 || !bytes.HasPrefix(g[12:32], []byte("NULL")) {
				return false, fmt.Errorf("not a ZMTP 3 NULL-mechanism peer (greeting % x)", g[:12])
			}
			c.conn.Consume(greetingLen)
			c.greeted = true
		}
		_, err := c.parse(nil)
		return c.ready, err
	})
}

// Room implements netloop.Session.
func (c *leanDealer) Room() int { return c.slots - len(c.inflight) }

// Inflight implements netloop.Session.
func (c *leanDealer) Inflight() int { return len(c.inflight) }

// Received implements netloop.Session.
func (c *leanDealer) Received(p *loadgen.Pipe) error {
	var err error
	c.replies, err = c.parse(c.replies[:0])
	end := p.Now()
	for _, r := range c.replies {
		p.Done(r.p.T, r.p.Start, end, r.err)
	}
	return err
}

// Fail implements netloop.Session.
func (c *leanDealer) Fail(p *loadgen.Pipe, now time.Time, cause error) {
	c.inflight.Fail(p, now, loadgen.ConnLost(&loadgen.CodedError{Code: netloop.LostCode(cause, errZMTP), Err: cause}))
}

// Abandon implements netloop.Session.
func (c *leanDealer) Abandon(p *loadgen.Pipe) { c.inflight.Abandon(p) }

// Expire implements netloop.Expirer: a reply the server dropped at its high-water mark never
// comes, so the request times out.
func (c *leanDealer) Expire(p *loadgen.Pipe, now time.Time) {
	for id, pd := range c.inflight {
		if now.Sub(pd.Start) > c.timeout {
			p.Done(pd.T, pd.Start, now, timeoutError(c.timeout))
			delete(c.inflight, id)
		}
	}
}

// Send implements netloop.Session: one request appended to the output.
func (c *leanDealer) Send(t loadgen.Ticket, now time.Time) error {
	c.nextID++
	out := append(c.conn.Out, c.prefix...)
	out = binary.BigEndian.AppendUint64(out, c.nextID)
	c.conn.Out = append(out, c.suffix...)
	c.inflight[c.nextID] = netloop.Pending{T: t, Start: now}
	return nil
}

var errZMTP = errors.New("ZMTP protocol error")

// reply is a complete reply taken off the connection.
type reply struct {
	p   netloop.Pending
	err error
}

// parse takes every complete frame from the input; complete replies to requests in flight are
// appended to dst. Commands (the server's READY) are handled here.
func (c *leanDealer) parse(dst []reply) ([]reply, error) {
	pos := 0
	c.frames = c.frames[:0]
	msgStart := 0
	for {
		if c.conn.N-pos < 2 {
			break
		}
		flags := c.conn.In[pos]
		hdr, size := 2, int(c.conn.In[pos+1])
		if flags&zmtpLong != 0 {
			if c.conn.N-pos < 9 {
				break
			}
			hdr = 9
			s := binary.BigEndian.Uint64(c.conn.In[pos+1 : pos+9])
			if s > 1<<31 {
				return dst, fmt.Errorf("%w: frame of %d bytes", errZMTP, s)
			}
			size = int(s)
		}
		if c.conn.N-pos < hdr+size {
			break
		}
		body := c.conn.In[pos+hdr : pos+hdr+size]
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
	c.conn.Consume(msgStart)
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
		c.conn.Out = appendZMTPFrame(c.conn.Out, zmtpCommand, append(pong, ctx...))
	}
	return nil
}

// Serve implements loadgen.Multiplexer: one netloop event loop over a group of lean DEALER
// connections, each keeping Concurrency requests in flight.
func (Driver) Serve(ctx context.Context, conns []loadgen.Conn, p *loadgen.Pipe) error {
	sessions := make([]netloop.Session, len(conns))
	for i, c := range conns {
		sessions[i] = c.(*leanDealer)
	}
	return netloop.Serve(ctx, sessions, p, netloop.Options{ExpireEvery: pollSlice})
}
