package zmqdriver

import (
	"context"
	"syscall"

	zmq "github.com/pebbe/zmq4"

	"github.com/protobench/protobench/internal/contract"
	"github.com/protobench/protobench/internal/loadgen"
)

// pushConn is one PUSH socket streaming raw payloads to the server's PULL sink.
type pushConn struct {
	cfg     *loadgen.Config
	wire    *loadgen.WireBytes
	m       *monitored
	payload []byte
}

func dialPush(ctx context.Context, cfg *loadgen.Config, wire *loadgen.WireBytes) (loadgen.Conn, error) {
	addr := option(cfg, OptionPullAddr, "5556")
	if err := loadgen.ProbeTCP(ctx, addr); err != nil {
		return nil, err
	}
	m, err := newMonitored(zmq.PUSH, addr)
	if err != nil {
		return nil, &loadgen.DialError{Address: addr, Err: err}
	}
	if err := m.waitConnected(ctx, addr); err != nil {
		m.close()
		return nil, err
	}
	return &pushConn{cfg: cfg, wire: wire, m: m, payload: contract.Payload(cfg.PayloadBytes)}, nil
}

func (c *pushConn) NewWorker(context.Context) (loadgen.Worker, error) {
	panic("zmq push connections are pipelined; the engine calls Pipeline")
}

func (c *pushConn) Close() error {
	c.m.close()
	return nil
}

// Pipeline implements loadgen.Pipeliner: one goroutine pushes on schedule (open model) or as
// fast as the socket's high-water mark lets it (closed model: the sink's pace is the limit).
func (c *pushConn) Pipeline(ctx context.Context, p *loadgen.Pipe) error {
	poller := zmq.NewPoller()
	poller.Add(c.m.mon, zmq.POLLIN)
	out := zmq.NewPoller()
	out.Add(c.m.sock, zmq.POLLOUT)
	out.Add(c.m.mon, zmq.POLLIN)
	for {
		now := p.Now()
		t, ok := p.Claim(now)
		if !ok {
			return nil
		}
		// Wait for the ticket, watching the connection meanwhile.
		for t.Intended.After(now) {
			if ctx.Err() != nil {
				p.Abandon(t)
				return nil
			}
			if _, err := poller.Poll(min(t.Intended.Sub(now), pollSlice)); err != nil && !isErrno(err, syscall.EINTR) {
				p.Abandon(t)
				return err
			}
			if c.m.disconnected() {
				p.Abandon(t)
				return errDisconnected
			}
			now = p.Now()
		}
		start := now
		for {
			_, err := c.m.sock.SendBytes(c.payload, zmq.DONTWAIT)
			if err == nil {
				c.wire.Sent.Add(int64(len(c.payload)))
				p.Done(t, start, p.Now(), nil)
				break
			}
			if !isErrno(err, syscall.EAGAIN) && !isErrno(err, syscall.EINTR) {
				p.Done(t, start, p.Now(), loadgen.ConnLost(err))
				return err
			}
			// At the high-water mark: wait until the socket can take more.
			if ctx.Err() != nil {
				p.Abandon(t)
				return nil
			}
			if _, err := out.Poll(pollSlice); err != nil && !isErrno(err, syscall.EINTR) {
				p.Abandon(t)
				return err
			}
			if c.m.disconnected() {
				p.Done(t, start, p.Now(), errDisconnected)
				return errDisconnected
			}
		}
	}
}
