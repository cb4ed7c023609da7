package netrpcdriver

import (
	"context"
	"encoding/gob"
	"errors"
	"fmt"
	"io"
	"net/rpc"
	"reflect"
	"time"

	"github.com/protobench/protobench/internal/loadgen"
	"github.com/protobench/protobench/internal/loadgen/netloop"
)

// The lean client runs the closed model. net/rpc's own client writes (and flushes) every call
// by itself and hands every reply from its reader goroutine to the caller's, which cost about as
// much CPU per call as the server spends on it. The lean client speaks the same bytes — net/rpc's
// gob codec: a gob-encoded rpc.Request and the arguments; an rpc.Response and the reply — with
// the standard gob encoder and decoder, but from an event loop (loadgen.Multiplexer) that writes
// every call that is due in one system call per connection and decodes replies in place.
// --netrpc-client net/rpc selects net/rpc's client instead.

// Option values of --netrpc-client.
const (
	ClientLean   = "lean"
	ClientNetRPC = "net/rpc"
)

// Multiplexes implements loadgen.Multiplexer.
func (Driver) Multiplexes(cfg *loadgen.Config) bool {
	return !cfg.Open() && netloop.Supported && cfg.Options["netrpc_client"] != ClientNetRPC
}

// leanConn is one net/rpc connection of the lean client.
type leanConn struct {
	cfg   *loadgen.Config
	wire  *loadgen.WireBytes
	slots int
	call  *worker // the method, arguments, reply and its check

	fd       int
	out      byteWriter
	watchOut bool
	enc      *gob.Encoder
	dec      *gob.Decoder
	seq      uint64
	inflight map[uint64]pending
	req      rpc.Request
	resp     rpc.Response

	in     []byte
	inN    int
	rpos   int // the decoder reads from here
	scan   int // next message to frame
	limit  int // end of the last complete reply: the decoder never reads past it
	values int // value messages framed since the last complete reply
	ready  int // complete replies not yet decoded
}

type pending struct {
	t     loadgen.Ticket
	start time.Time
}

type byteWriter []byte

func (w *byteWriter) Write(p []byte) (int, error) { *w = append(*w, p...); return len(p), nil }

func (c *leanConn) NewWorker(context.Context) (loadgen.Worker, error) {
	return nil, errors.New("netrpc lean connections are served by event loops")
}

func (c *leanConn) Close() error {
	if c.fd >= 0 {
		_ = netloop.Close(c.fd)
		c.fd = -1
	}
	return nil
}

func dialLean(ctx context.Context, cfg *loadgen.Config, wire *loadgen.WireBytes) (*leanConn, error) {
	proto := &conn{cfg: cfg}
	w, err := proto.newCall()
	if err != nil {
		return nil, err
	}
	c := &leanConn{cfg: cfg, wire: wire, slots: cfg.Concurrency, call: w, fd: -1}
	return c, c.connect(ctx)
}

// connect opens a connection with a fresh gob stream in each direction.
func (c *leanConn) connect(ctx context.Context) error {
	fd, err := netloop.Dial(ctx, c.cfg.Target.Address)
	if err != nil {
		return err
	}
	c.fd, c.watchOut = fd, false
	c.out = c.out[:0]
	c.enc = gob.NewEncoder(&c.out)
	c.dec = gob.NewDecoder(c)
	c.inflight = map[uint64]pending{}
	if c.in == nil {
		c.in = make([]byte, 64<<10)
	}
	c.inN, c.rpos, c.scan, c.limit, c.values, c.ready = 0, 0, 0, 0, 0, 0
	return nil
}

// Read and ReadByte feed the gob decoder from the input buffer, up to the end of the last
// complete reply. Being an io.ByteReader keeps gob from wrapping it in a bufio.Reader that would
// read ahead into a reply still arriving.
func (c *leanConn) Read(p []byte) (int, error) {
	if c.rpos >= c.limit {
		return 0, io.ErrUnexpectedEOF
	}
	n := copy(p, c.in[c.rpos:c.limit])
	c.rpos += n
	return n, nil
}

func (c *leanConn) ReadByte() (byte, error) {
	if c.rpos >= c.limit {
		return 0, io.ErrUnexpectedEOF
	}
	b := c.in[c.rpos]
	c.rpos++
	return b, nil
}

// send appends one call to the output.
func (c *leanConn) send(t loadgen.Ticket, now time.Time) error {
	c.seq++
	c.req.ServiceMethod, c.req.Seq = c.call.method, c.seq
	if err := c.enc.Encode(&c.req); err != nil {
		return err
	}
	if err := c.enc.Encode(c.call.args); err != nil {
		return err
	}
	c.inflight[c.seq] = pending{t: t, start: now}
	return nil
}

func (c *leanConn) flushOnce() error {
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

var errClosedByServer = errors.New("connection closed by the server")

// readOnce reads what has arrived and frames the gob messages in it.
func (c *leanConn) readOnce() error {
	if c.rpos > 0 && c.rpos == c.limit && c.ready == 0 {
		// Everything decoded: move the unframed tail to the front.
		n := copy(c.in, c.in[c.rpos:c.inN])
		c.scan -= c.rpos
		c.inN, c.rpos, c.limit = n, 0, 0
	}
	if c.inN == len(c.in) {
		c.in = append(c.in, make([]byte, len(c.in))...)
	}
	n, err := netloop.Read(c.fd, c.in[c.inN:])
	if err != nil {
		return err
	}
	if n == 0 {
		return errClosedByServer
	}
	c.wire.Received.Add(int64(n))
	c.inN += n
	return c.frame()
}

var errGob = errors.New("malformed gob stream")

// frame walks the complete gob messages after c.scan. A reply is two value messages (the
// rpc.Response, then the reply or an empty struct); type definitions (negative type ids) may come
// before either.
func (c *leanConn) frame() error {
	for {
		count, n, err := gobUint(c.in[c.scan:c.inN])
		if err == errIncomplete {
			return nil
		}
		if err != nil || count == 0 || count > 1<<30 {
			return fmt.Errorf("%w: message of %d bytes", errGob, count)
		}
		body := c.scan + n
		if c.inN-body < int(count) {
			return nil
		}
		id, _, err := gobUint(c.in[body : body+int(count)])
		if err != nil {
			return fmt.Errorf("%w: no type id", errGob)
		}
		c.scan = body + int(count)
		if id&1 == 0 { // a non-negative type id: a value
			c.values++
			if c.values == 2 {
				c.values = 0
				c.limit = c.scan
				c.ready++
			}
		}
	}
}

var errIncomplete = errors.New("incomplete")

// gobUint decodes gob's unsigned integer: one byte below 128, else a byte holding minus the
// count of big-endian bytes that follow.
func gobUint(p []byte) (uint64, int, error) {
	if len(p) == 0 {
		return 0, 0, errIncomplete
	}
	if p[0] < 0x80 {
		return uint64(p[0]), 1, nil
	}
	n := int(-int8(p[0]))
	if n < 1 || n > 8 {
		return 0, 0, errGob
	}
	if len(p) < 1+n {
		return 0, 0, errIncomplete
	}
	var v uint64
	for _, b := range p[1 : 1+n] {
		v = v<<8 | uint64(b)
	}
	return v, 1 + n, nil
}

// decode decodes the complete replies and records them.
func (c *leanConn) decode(p *loadgen.Pipe) error {
	end := p.Now()
	for ; c.ready > 0; c.ready-- {
		c.resp = rpc.Response{}
		if err := c.dec.Decode(&c.resp); err != nil {
			return fmt.Errorf("%w: reply header: %v", errGob, err)
		}
		var outcome error
		if c.resp.Error != "" {
			if err := c.dec.DecodeValue(reflect.Value{}); err != nil { // discard the empty body
				return fmt.Errorf("%w: error reply body: %v", errGob, err)
			}
			outcome = loadgen.ProtocolError(CodeServerError, rpc.ServerError(c.resp.Error))
		} else {
			c.call.reset()
			if err := c.dec.Decode(c.call.reply); err != nil {
				return fmt.Errorf("%w: reply body: %v", errGob, err)
			}
			if err := c.call.check(); err != nil {
				outcome = loadgen.ProtocolError(loadgen.CodeBadResponse, err)
			}
		}
		pd, ok := c.inflight[c.resp.Seq]
		if !ok {
			return fmt.Errorf("%w: reply to unknown call %d", errGob, c.resp.Seq)
		}
		delete(c.inflight, c.resp.Seq)
		p.Done(pd.t, pd.start, end, outcome)
	}
	return nil
}

// Serve implements loadgen.Multiplexer: one event loop over a group of lean connections, each
// keeping Concurrency calls outstanding.
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
	replace := func(c *leanConn, cause error) error {
		now := p.Now()
		code := loadgen.CodeConnReset
		switch {
		case errors.Is(cause, errClosedByServer):
			code = loadgen.CodeEOF
		case errors.Is(cause, errGob):
			code = loadgen.CodeBadResponse
		}
		lost := loadgen.ConnLost(&loadgen.CodedError{Code: code, Err: cause})
		for seq, pd := range c.inflight {
			p.Done(pd.t, pd.start, now, lost)
			delete(c.inflight, seq)
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
				for seq, pd := range c.inflight {
					p.Abandon(pd.t)
					delete(c.inflight, seq)
				}
			}
			return nil
		}
		now := p.Now()
		inflight := 0
		for _, c := range lc {
			for !over && len(c.inflight) < c.slots {
				t, ok := p.Claim(now)
				if !ok {
					over = true
					break
				}
				if err := c.send(t, now); err != nil {
					return err
				}
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
		if len(events) > 0 {
			// Pick up replies that arrived meanwhile, so the next calls go out in batches.
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
				err = c.decode(p)
			} else if netloop.IsAgain(err) {
				err = nil
			}
			if err != nil {
				if err := replace(c, err); err != nil {
					return err
				}
			}
		}
	}
}
