package zmqdriver

import (
	"context"
	"syscall"
	"time"

	zmq "github.com/pebbe/zmq4"

	"github.com/protobench/protobench/internal/loadgen"
	"github.com/protobench/protobench/internal/wire/zmqwire"
)

// reqConn hands out REQ workers, each with a socket of its own: a REQ socket allows exactly one
// request in flight, which is the point of the lockstep pattern.
type reqConn struct {
	cfg  *loadgen.Config
	wire *loadgen.WireBytes
}

func (c *reqConn) Close() error { return nil }

func (c *reqConn) NewWorker(ctx context.Context) (loadgen.Worker, error) {
	addr := c.cfg.Target.Address
	if err := loadgen.ProbeTCP(ctx, addr); err != nil {
		return nil, err
	}
	req, err := buildRequest(c.cfg)
	if err != nil {
		return nil, err
	}
	m, err := newMonitored(zmq.REQ, addr)
	if err != nil {
		return nil, &loadgen.DialError{Address: addr, Err: err}
	}
	if err := m.waitConnected(ctx, addr); err != nil {
		m.close()
		return nil, err
	}
	w := &reqWorker{conn: c, req: req, m: m, poller: zmq.NewPoller(), idBuf: make([]byte, zmqwire.IDBytes), timeout: requestTimeout(c.cfg)}
	w.poller.Add(m.sock, zmq.POLLIN)
	w.poller.Add(m.mon, zmq.POLLIN)
	return w, nil
}

type reqWorker struct {
	conn    *reqConn
	req     request
	m       *monitored
	poller  *zmq.Poller
	id      uint64
	idBuf   []byte
	timeout time.Duration
}

// Do sends one request and waits for its reply. After a failure the REQ socket is stuck in its
// send-then-receive state machine, so every failure is reported as a lost connection and the
// engine makes a fresh worker.
func (w *reqWorker) Do(ctx context.Context) error {
	w.id++
	putID(w.idBuf, w.id)
	n, err := send(w.m.sock, w.req.method, w.idBuf, w.req.body)
	w.conn.wire.Sent.Add(int64(n))
	if err != nil {
		return loadgen.ConnLost(err)
	}
	deadline := time.Now().Add(w.timeout)
	for {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		left := time.Until(deadline)
		if left <= 0 {
			return loadgen.ConnLost(timeoutError(w.timeout))
		}
		polled, err := w.poller.Poll(min(left, pollSlice))
		if err != nil && !isErrno(err, syscall.EINTR) {
			return loadgen.ConnLost(err)
		}
		for _, pl := range polled {
			if pl.Socket == w.m.mon {
				if w.m.disconnected() {
					return errDisconnected
				}
				continue
			}
			msg, err := w.m.sock.RecvMessageBytes(zmq.DONTWAIT)
			if err != nil {
				if isErrno(err, syscall.EAGAIN) || isErrno(err, syscall.EINTR) {
					continue
				}
				return loadgen.ConnLost(err)
			}
			size := 0
			for _, f := range msg {
				size += len(f)
			}
			w.conn.wire.Received.Add(int64(size))
			rep, err := zmqwire.DecodeReply(msg)
			if err != nil {
				return loadgen.ProtocolError(loadgen.CodeBadResponse, err)
			}
			if rep.ID != w.id {
				return loadgen.ConnLost(loadgen.ProtocolError(loadgen.CodeBadResponse, errMismatchedID))
			}
			return w.req.replyError(rep)
		}
	}
}

var errMismatchedID = errorString("reply carries another request's id")

type errorString string

func (e errorString) Error() string { return string(e) }

func (w *reqWorker) Close() error {
	w.m.close()
	return nil
}
