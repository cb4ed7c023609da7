package httpdriver

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"time"

	"github.com/protobench/protobench/internal/loadgen"
	"github.com/protobench/protobench/internal/loadgen/netloop"
	"github.com/protobench/protobench/internal/wire/h2wire"
)

// call is what an HTTP/2 stream carries: the ticket and when the request went out.
type call struct {
	t     loadgen.Ticket
	start time.Time
}

// h2Session is one h2c connection with Concurrency streams: a netloop.Session, like the gRPC
// driver's lean connection.
type h2Session struct {
	cfg    *loadgen.Config
	c      *conn
	slots  int
	fields []h2wire.Field
	blocks h2wire.HeaderBlocks
	body   []byte // nil: the request ends with its HEADERS
	conn   *netloop.Conn
	h2     h2wire.Client[call]
}

func newH2Session(cfg *loadgen.Config, c *conn) *h2Session {
	s := &h2Session{cfg: cfg, c: c, slots: cfg.Concurrency, fields: c.r.http2(cfg.Target.Address), conn: netloop.NewConn(c.wire)}
	if len(c.r.body) > 0 {
		s.body = c.r.body
	}
	s.h2.Out = &s.conn.Out
	return s
}

// Conn implements netloop.Session.
func (s *h2Session) Conn() *netloop.Conn { return s.conn }

// Connect implements netloop.Session: the connection, our preface and the server's SETTINGS.
func (s *h2Session) Connect(ctx context.Context) error {
	addr := s.cfg.Target.Address
	if err := s.conn.Dial(ctx, addr); err != nil {
		return err
	}
	s.h2.Reset()
	err := s.conn.Handshake(ctx, addr, "no HTTP/2 (h2c) SETTINGS from the server", func() (bool, error) {
		n, err := s.h2.Frames(s.conn.In[:s.conn.N])
		s.conn.Consume(n)
		return s.h2.Settled, err
	})
	if err != nil {
		return err
	}
	s.blocks = h2wire.EncodeHeaders(s.fields, s.h2.HeaderTableSize())
	return nil
}

// Room implements netloop.Session.
func (s *h2Session) Room() int { return s.h2.Room(s.slots, len(s.body)) }

// Send implements netloop.Session.
func (s *h2Session) Send(t loadgen.Ticket, now time.Time) error {
	s.h2.Open(&s.blocks, s.body, call{t: t, start: now})
	return nil
}

// Inflight implements netloop.Session.
func (s *h2Session) Inflight() int { return s.h2.Inflight() }

var errGoingAway = errors.New("the server is going away (GOAWAY)")

// Received implements netloop.Session.
func (s *h2Session) Received(p *loadgen.Pipe) error {
	n, err := s.h2.Frames(s.conn.In[:s.conn.N])
	s.conn.Consume(n)
	if len(s.h2.Finished) > 0 {
		end := p.Now()
		for _, st := range s.h2.Finished {
			p.Done(st.Req.t, st.Req.start, end, s.outcome(st))
			s.h2.Recycle(st)
		}
		s.h2.Finished = s.h2.Finished[:0]
	}
	if err == nil && s.h2.GoingAway && s.h2.Inflight() == 0 {
		err = errGoingAway
	}
	return err
}

func (s *h2Session) outcome(st *h2wire.Stream[call]) error {
	if st.RST {
		return loadgen.ProtocolError(loadgen.CodeConnReset, fmt.Errorf("stream reset (HTTP/2 error %d)", st.RSTCode))
	}
	return s.c.outcome(st.Status, st.Data)
}

// Fail implements netloop.Session.
func (s *h2Session) Fail(p *loadgen.Pipe, now time.Time, cause error) {
	lost := loadgen.ConnLost(&loadgen.CodedError{Code: netloop.LostCode(cause, h2wire.ErrProtocol), Err: cause})
	for _, st := range s.h2.Finished {
		p.Done(st.Req.t, st.Req.start, now, s.outcome(st))
	}
	s.h2.Finished = s.h2.Finished[:0]
	s.h2.Each(func(st *h2wire.Stream[call]) { p.Done(st.Req.t, st.Req.start, now, lost) })
}

// Abandon implements netloop.Session.
func (s *h2Session) Abandon(p *loadgen.Pipe) {
	s.h2.Each(func(st *h2wire.Stream[call]) { p.Abandon(st.Req.t) })
}

// newH2Client is net/http's client over h2c with prior knowledge, for the open model (and for
// bodies larger than one frame): one TCP connection per loadgen connection, its streams shared
// by the workers.
func newH2Client(cfg *loadgen.Config, wire *loadgen.WireBytes) *http.Client {
	var protocols http.Protocols
	protocols.SetUnencryptedHTTP2(true)
	tr := &http.Transport{
		Protocols: &protocols,
		DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
			nc, err := loadgen.DialTCP(ctx, addr)
			if err != nil {
				return nil, err
			}
			return loadgen.CountingConn(nc, wire), nil
		},
		MaxConnsPerHost:     1,
		MaxIdleConnsPerHost: 1,
		DisableCompression:  true,
		HTTP2:               &http.HTTP2Config{MaxReceiveBufferPerConnection: h2wire.ReceiveWindow, MaxReceiveBufferPerStream: h2wire.ReceiveWindow},
	}
	return &http.Client{Transport: tr}
}

// h2Worker sends one request at a time through the connection's net/http client.
type h2Worker struct {
	conn *conn
	body bytes.Buffer
}

func (w *h2Worker) Do(ctx context.Context) error {
	r := w.conn.r
	var body io.Reader
	if len(r.body) > 0 {
		body = bytes.NewReader(r.body)
	}
	req, err := http.NewRequestWithContext(ctx, r.method, "http://"+w.conn.addr+r.path, body)
	if err != nil {
		return err
	}
	for _, h := range r.headers {
		req.Header.Add(h.Name, h.Value)
	}
	req.Header.Set("User-Agent", "protobench")
	resp, err := w.conn.client.Do(req)
	if err != nil {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		return loadgen.ConnLost(err)
	}
	w.body.Reset()
	_, err = w.body.ReadFrom(resp.Body)
	_ = resp.Body.Close()
	if err != nil {
		return loadgen.ConnLost(err)
	}
	return w.conn.outcome(resp.StatusCode, w.body.Bytes())
}

func (w *h2Worker) Close() error { return nil }
