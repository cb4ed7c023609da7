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

// The lean client runs both models. net/rpc's own client writes (and flushes) every call
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

// Multiplexes implements loadgen.Multiplexer: the closed model, churning or not.
func (Driver) Multiplexes(cfg *loadgen.Config) bool {
	return !(cfg.Open() && cfg.Churns()) && netloop.Supported && cfg.Options["netrpc_client"] != ClientNetRPC
}

// leanConn is one net/rpc connection of the lean client: a netloop.Session.
type leanConn struct {
	cfg   *loadgen.Config
	slots int
	call  *worker // the method, arguments, reply and its check

	conn     *netloop.Conn
	enc      *gob.Encoder
	dec      *gob.Decoder
	seq      uint64
	inflight netloop.Inflight[uint64]
	req      rpc.Request
	resp     rpc.Response

	rpos   int // the decoder reads conn.In from here
	scan   int // next message to frame
	limit  int // end of the last complete reply: the decoder never reads past it
	values int // value messages framed since the last complete reply
	ready  int // complete replies not yet decoded
}

// outWriter is where the gob encoder writes: the connection's output.
type outWriter struct{ conn *netloop.Conn }

func (w outWriter) Write(p []byte) (int, error) {
	w.conn.Out = append(w.conn.Out, p...)
	return len(p), nil
}

func (c *leanConn) NewWorker(context.Context) (loadgen.Worker, error) {
	return nil, errors.New("netrpc lean connections are served by event loops")
}

func (c *leanConn) Close() error { return c.conn.Close() }

func dialLean(ctx context.Context, cfg *loadgen.Config, wire *loadgen.WireBytes) (*leanConn, error) {
	proto := &conn{cfg: cfg}
	w, err := proto.newCall()
	if err != nil {
		return nil, err
	}
	c := &leanConn{cfg: cfg, slots: cfg.Concurrency, call: w, conn: netloop.NewConn(wire)}
	c.conn.TLS = cfg.TLS
	return c, c.Connect(ctx)
}

// Conn implements netloop.Session.
func (c *leanConn) Conn() *netloop.Conn { return c.conn }

// Connect implements netloop.Session: a new connection with a fresh gob stream each way.
func (c *leanConn) Connect(ctx context.Context) error {
	if err := c.conn.Dial(ctx, c.cfg.Target.Address); err != nil {
		return err
	}
	return c.resetStreams()
}

// Opening implements netloop.Opener: fresh gob streams; net/rpc says nothing before a call.
func (c *leanConn) Opening() error { return c.resetStreams() }

// Opened implements netloop.Opener.
func (c *leanConn) Opened() (bool, error) { return true, nil }

// resetStreams starts fresh gob streams each way on a new connection.
func (c *leanConn) resetStreams() error {
	c.enc = gob.NewEncoder(outWriter{c.conn})
	c.dec = gob.NewDecoder(c)
	c.inflight = netloop.Inflight[uint64]{}
	c.rpos, c.scan, c.limit, c.values, c.ready = 0, 0, 0, 0, 0
	return nil
}

// Room implements netloop.Session.
func (c *leanConn) Room() int { return c.slots - len(c.inflight) }

// Inflight implements netloop.Session.
func (c *leanConn) Inflight() int { return len(c.inflight) }

// Fail implements netloop.Session.
func (c *leanConn) Fail(p *loadgen.Pipe, now time.Time, cause error) {
	c.inflight.Fail(p, now, loadgen.ConnLost(&loadgen.CodedError{Code: netloop.LostCode(cause, errGob), Err: cause}))
}

// Abandon implements netloop.Session.
func (c *leanConn) Abandon(p *loadgen.Pipe) { c.inflight.Abandon(p) }

// Received implements netloop.Session: frame the gob messages that arrived, decode the complete
// replies, and drop what is decoded from the buffer.
func (c *leanConn) Received(p *loadgen.Pipe) error {
	if err := c.frame(); err != nil {
		return err
	}
	if err := c.decode(p); err != nil {
		return err
	}
	if c.rpos > 0 && c.rpos == c.limit {
		c.conn.Consume(c.rpos)
		c.scan -= c.rpos
		c.rpos, c.limit = 0, 0
	}
	return nil
}

// Read and ReadByte feed the gob decoder from the input buffer, up to the end of the last
// complete reply. Being an io.ByteReader keeps gob from wrapping it in a bufio.Reader that would
// read ahead into a reply still arriving.
func (c *leanConn) Read(p []byte) (int, error) {
	if c.rpos >= c.limit {
		return 0, io.ErrUnexpectedEOF
	}
	n := copy(p, c.conn.In[c.rpos:c.limit])
	c.rpos += n
	return n, nil
}

func (c *leanConn) ReadByte() (byte, error) {
	if c.rpos >= c.limit {
		return 0, io.ErrUnexpectedEOF
	}
	b := c.conn.In[c.rpos]
	c.rpos++
	return b, nil
}

// Send implements netloop.Session: one call appended to the output.
func (c *leanConn) Send(t loadgen.Ticket, now time.Time) error {
	c.seq++
	c.req.ServiceMethod, c.req.Seq = c.call.method, c.seq
	if err := c.enc.Encode(&c.req); err != nil {
		return err
	}
	if err := c.enc.Encode(c.call.args); err != nil {
		return err
	}
	c.inflight[c.seq] = netloop.Pending{T: t, Start: now}
	return nil
}

var errGob = errors.New("malformed gob stream")

// frame walks the complete gob messages after c.scan. A reply is two value messages (the
// rpc.Response, then the reply or an empty struct); type definitions (negative type ids) may come
// before either.
func (c *leanConn) frame() error {
	for {
		count, n, err := gobUint(c.conn.In[c.scan:c.conn.N])
		if err == errIncomplete {
			return nil
		}
		if err != nil || count == 0 || count > 1<<30 {
			return fmt.Errorf("%w: message of %d bytes", errGob, count)
		}
		body := c.scan + n
		if c.conn.N-body < int(count) {
			return nil
		}
		id, _, err := gobUint(c.conn.In[body : body+int(count)])
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
	for c.ready > 0 {
		pd, outcome, err := c.decodeReply()
		if err != nil {
			return err
		}
		p.Done(pd.T, pd.Start, end, outcome)
	}
	return nil
}

// decodeReply decodes the next complete reply and takes its call out of those in flight.
func (c *leanConn) decodeReply() (netloop.Pending, error, error) {
	c.ready--
	c.resp = rpc.Response{}
	if err := c.dec.Decode(&c.resp); err != nil {
		return netloop.Pending{}, nil, fmt.Errorf("%w: reply header: %v", errGob, err)
	}
	var outcome error
	if c.resp.Error != "" {
		if err := c.dec.DecodeValue(reflect.Value{}); err != nil { // discard the empty body
			return netloop.Pending{}, nil, fmt.Errorf("%w: error reply body: %v", errGob, err)
		}
		outcome = loadgen.ProtocolError(CodeServerError, rpc.ServerError(c.resp.Error))
	} else {
		c.call.reset()
		if err := c.dec.Decode(c.call.reply); err != nil {
			return netloop.Pending{}, nil, fmt.Errorf("%w: reply body: %v", errGob, err)
		}
		if err := c.call.check(); err != nil {
			outcome = loadgen.ProtocolError(loadgen.CodeBadResponse, err)
		}
	}
	pd, ok := c.inflight[c.resp.Seq]
	if !ok {
		return netloop.Pending{}, nil, fmt.Errorf("%w: reply to unknown call %d", errGob, c.resp.Seq)
	}
	delete(c.inflight, c.resp.Seq)
	return pd, outcome, nil
}

// Serve implements loadgen.Multiplexer: one netloop event loop over a group of lean connections,
// each keeping Concurrency calls outstanding.
func (Driver) Serve(ctx context.Context, conns []loadgen.Conn, p *loadgen.Pipe) error {
	sessions := make([]netloop.Session, len(conns))
	for i, c := range conns {
		sessions[i] = c.(*leanConn)
	}
	return netloop.Serve(ctx, sessions, p, netloop.Options{})
}
