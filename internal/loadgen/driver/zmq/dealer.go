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
	timeout := requestTimeout(c.cfg)
	inflight := make(map[uint64]pending, p.Depth)
	poller := zmq.NewPoller()
	poller.Add(c.d.sock, zmq.POLLIN)
	poller.Add(c.d.mon, zmq.POLLIN)
	if c.sub != nil {
		poller.Add(c.sub, zmq.POLLIN)
	}
	var (
		id        uint64
		next      loadgen.Ticket
		have      bool
		over      bool
		lastSweep = p.Now()
	)
	method := c.req.method
	empty := []byte{}
	idBuf := make([]byte, zmqwire.IDBytes)
	failAll := func(err error) {
		now := p.Now()
		for k, pd := range inflight {
			p.Done(pd.t, pd.start, now, err)
			delete(inflight, k)
		}
		if have {
			p.Abandon(next)
			have = false
		}
	}
	for {
		now := p.Now()
		for !over && len(inflight) < p.Depth {
			if !have {
				if next, have = p.Claim(now); !have {
					over = true
					break
				}
			}
			if next.Intended.After(now) {
				break
			}
			id++
			putID(idBuf, id)
			n, err := send(c.d.sock, empty, method, idBuf, c.req.body)
			c.wire.Sent.Add(int64(n))
			if err != nil {
				end := p.Now()
				p.Done(next, now, end, loadgen.ConnLost(err))
				have = false
				failAll(errDisconnected)
				return err
			}
			inflight[id] = pending{t: next, start: now}
			have = false
			now = p.Now()
		}
		if over && len(inflight) == 0 {
			return nil
		}
		if ctx.Err() != nil {
			for k, pd := range inflight {
				p.Abandon(pd.t)
				delete(inflight, k)
			}
			if have {
				p.Abandon(next)
			}
			return nil
		}
		wait := pollSlice
		if have && len(inflight) < p.Depth {
			wait = min(wait, next.Intended.Sub(p.Now()))
			if wait < 0 {
				wait = 0
			}
		}
		polled, err := poller.Poll(wait)
		if err != nil && !isErrno(err, syscall.EINTR) {
			failAll(loadgen.ConnLost(err))
			return err
		}
		for _, pl := range polled {
			switch pl.Socket {
			case c.d.sock:
				if err := c.receive(p, inflight); err != nil {
					failAll(loadgen.ConnLost(err))
					return err
				}
			case c.d.mon:
				if c.d.disconnected() {
					failAll(errDisconnected)
					return errDisconnected
				}
			case c.sub:
				c.drainSub()
			}
		}
		// Replies the server dropped at its high-water mark never come: time them out.
		if now := p.Now(); now.Sub(lastSweep) >= pollSlice {
			lastSweep = now
			for k, pd := range inflight {
				if now.Sub(pd.start) > timeout {
					p.Done(pd.t, pd.start, now, timeoutError(timeout))
					delete(inflight, k)
				}
			}
		}
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
