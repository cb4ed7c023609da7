package zmqdriver

import (
	"context"
	"syscall"
	"time"

	zmq "github.com/pebbe/zmq4"

	"github.com/protobench/protobench/internal/loadgen"
	"github.com/protobench/protobench/internal/wire/zmqwire"
)

// dealerConn is one DEALER socket with many requests in flight, plus a SUB socket for fan-out.
type dealerConn struct {
	cfg  *loadgen.Config
	wire *loadgen.WireBytes
	req  request
	d    *monitored
	sub  *zmq.Socket // sub pattern only
}

func dialDealer(ctx context.Context, cfg *loadgen.Config, wire *loadgen.WireBytes) (loadgen.Conn, error) {
	addr := cfg.Target.Address
	if err := loadgen.ProbeTCP(ctx, addr); err != nil {
		return nil, err
	}
	req, err := buildRequest(cfg)
	if err != nil {
		return nil, err
	}
	d, err := newMonitored(zmq.DEALER, addr)
	if err != nil {
		return nil, &loadgen.DialError{Address: addr, Err: err}
	}
	c := &dealerConn{cfg: cfg, wire: wire, req: req, d: d}
	if err := d.waitConnected(ctx, addr); err != nil {
		c.Close()
		return nil, err
	}
	if cfg.Pattern == PatternSub {
		pub := option(cfg, OptionPubAddr, "5557")
		if err := loadgen.ProbeTCP(ctx, pub); err != nil {
			c.Close()
			return nil, err
		}
		s, err := zmq.NewSocket(zmq.SUB)
		if err == nil {
			_ = s.SetLinger(0)
			err = s.SetSubscribe("")
		}
		if err == nil {
			err = s.Connect("tcp://" + pub)
		}
		if err != nil {
			if s != nil {
				s.Close()
			}
			c.Close()
			return nil, &loadgen.DialError{Address: pub, Err: err}
		}
		c.sub = s
	}
	return c, nil
}

func (c *dealerConn) NewWorker(context.Context) (loadgen.Worker, error) {
	panic("zmq dealer connections are pipelined; the engine calls Pipeline")
}

func (c *dealerConn) Close() error {
	c.d.close()
	if c.sub != nil {
		_ = c.sub.Close()
	}
	return nil
}

type pending struct {
	t     loadgen.Ticket
	start time.Time
}

// pollSlice bounds each poll so that a cancelled run is noticed promptly.
const pollSlice = 50 * time.Millisecond

// Pipeline implements loadgen.Pipeliner: send whatever is due while fewer than Depth requests are
// in flight, then poll for replies (or until the next ticket is due), and repeat.
func (c *dealerConn) Pipeline(ctx context.Context, p *loadgen.Pipe) error {
	r := c.newPipelineRun(p)
	for {
		if err := r.sendDue(); err != nil {
			return err
		}
		if r.over && len(r.inflight) == 0 {
			return nil
		}
		if ctx.Err() != nil {
			r.abandonAll()
			return nil
		}
		polled, err := r.poller.Poll(r.pollWait())
		if err != nil && !isErrno(err, syscall.EINTR) {
			r.failAll(loadgen.ConnLost(err))
			return err
		}
		if err := r.handle(polled); err != nil {
			return err
		}
		r.expire()
	}
}

// pipelineRun is the state of one Pipeline call.
type pipelineRun struct {
	c         *dealerConn
	p         *loadgen.Pipe
	poller    *zmq.Poller
	timeout   time.Duration
	inflight  map[uint64]pending
	id        uint64         // the last request's id
	next      loadgen.Ticket // claimed, not yet sent, when have
	have      bool
	over      bool // the schedule has no more tickets
	lastSweep time.Time
	empty     []byte // the envelope's empty delimiter frame
	idBuf     []byte
}

func (c *dealerConn) newPipelineRun(p *loadgen.Pipe) *pipelineRun {
	poller := zmq.NewPoller()
	poller.Add(c.d.sock, zmq.POLLIN)
	poller.Add(c.d.mon, zmq.POLLIN)
	if c.sub != nil {
		poller.Add(c.sub, zmq.POLLIN)
	}
	return &pipelineRun{
		c: c, p: p, poller: poller,
		timeout:   requestTimeout(c.cfg),
		inflight:  make(map[uint64]pending, p.Depth),
		lastSweep: p.Now(),
		empty:     []byte{},
		idBuf:     make([]byte, zmqwire.IDBytes),
	}
}

// sendDue sends every ticket that is due while fewer than Depth requests are in flight. A failed
// send ends every request in flight as lost, and the error ends the pipeline.
func (r *pipelineRun) sendDue() error {
	c, p := r.c, r.p
	now := p.Now()
	for !r.over && len(r.inflight) < p.Depth {
		if !r.have {
			if r.next, r.have = p.Claim(now); !r.have {
				r.over = true
				break
			}
		}
		if r.next.Intended.After(now) {
			break
		}
		r.id++
		putID(r.idBuf, r.id)
		n, err := send(c.d.sock, r.empty, c.req.method, r.idBuf, c.req.body)
		c.wire.Sent.Add(int64(n))
		if err != nil {
			end := p.Now()
			p.Done(r.next, now, end, loadgen.ConnLost(err))
			r.have = false
			r.failAll(errDisconnected)
			return err
		}
		r.inflight[r.id] = pending{t: r.next, start: now}
		r.have = false
		now = p.Now()
	}
	return nil
}

// pollWait is how long to poll: a slice, or until the next ticket is due if there is room for it.
func (r *pipelineRun) pollWait() time.Duration {
	wait := pollSlice
	if r.have && len(r.inflight) < r.p.Depth {
		wait = min(wait, r.next.Intended.Sub(r.p.Now()))
		if wait < 0 {
			wait = 0
		}
	}
	return wait
}

// handle reads what the poll found: replies, a disconnection, fan-out copies.
func (r *pipelineRun) handle(polled []zmq.Polled) error {
	c := r.c
	for _, pl := range polled {
		switch pl.Socket {
		case c.d.sock:
			if err := c.receive(r.p, r.inflight); err != nil {
				r.failAll(loadgen.ConnLost(err))
				return err
			}
		case c.d.mon:
			if c.d.disconnected() {
				r.failAll(errDisconnected)
				return errDisconnected
			}
		case c.sub:
			c.drainSub()
		}
	}
	return nil
}

// expire times out, once per poll slice, the requests whose replies the server dropped at its
// high-water mark: they never come.
func (r *pipelineRun) expire() {
	now := r.p.Now()
	if now.Sub(r.lastSweep) < pollSlice {
		return
	}
	r.lastSweep = now
	for k, pd := range r.inflight {
		if now.Sub(pd.start) > r.timeout {
			r.p.Done(pd.t, pd.start, now, timeoutError(r.timeout))
			delete(r.inflight, k)
		}
	}
}

// failAll ends every request in flight with err and gives back a claimed ticket.
func (r *pipelineRun) failAll(err error) {
	now := r.p.Now()
	for k, pd := range r.inflight {
		r.p.Done(pd.t, pd.start, now, err)
		delete(r.inflight, k)
	}
	if r.have {
		r.p.Abandon(r.next)
		r.have = false
	}
}

// abandonAll drops every request in flight and the claimed ticket unrecorded: the run is over.
func (r *pipelineRun) abandonAll() {
	for k, pd := range r.inflight {
		r.p.Abandon(pd.t)
		delete(r.inflight, k)
	}
	if r.have {
		r.p.Abandon(r.next)
	}
}

// receive takes every reply that has arrived.
func (c *dealerConn) receive(p *loadgen.Pipe, inflight map[uint64]pending) error {
	for {
		msg, err := c.d.sock.RecvMessageBytes(zmq.DONTWAIT)
		if err != nil {
			if isErrno(err, syscall.EAGAIN) || isErrno(err, syscall.EINTR) {
				return nil
			}
			return err
		}
		end := p.Now()
		n := 0
		for _, f := range msg {
			n += len(f)
		}
		c.wire.Received.Add(int64(n))
		rep, err := zmqwire.DecodeReply(msg)
		if err != nil {
			continue // not ours to match; the request will time out
		}
		pd, ok := inflight[rep.ID]
		if !ok {
			continue // a reply to a request already timed out
		}
		delete(inflight, rep.ID)
		p.Done(pd.t, pd.start, end, c.req.replyError(rep))
	}
}

// drainSub counts the fan-out copies that have arrived.
func (c *dealerConn) drainSub() {
	for {
		b, err := c.sub.RecvBytes(zmq.DONTWAIT)
		if err != nil {
			return
		}
		c.wire.Messages.Add(1)
		c.wire.Received.Add(int64(len(b)))
	}
}

func putID(b []byte, id uint64) {
	for i := 7; i >= 0; i-- {
		b[i] = byte(id)
		id >>= 8
	}
}
