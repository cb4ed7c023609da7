// Package h2session is the netloop session of an HTTP/2 client connection, shared by the gRPC
// driver's lean client and the HTTP driver's h2c client: each request is one stream carrying a
// prebuilt header block and at most one DATA frame; the protocol judges finished streams.
package h2session

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"time"

	"github.com/protobench/protobench/internal/loadgen"
	"github.com/protobench/protobench/internal/loadgen/netloop"
	"github.com/protobench/protobench/internal/wire/h2wire"
)

// Call is what a stream carries: the ticket and when the request went out.
type Call struct {
	T     loadgen.Ticket
	Start time.Time
}

// Stream is a request in flight or finished.
type Stream = h2wire.Stream[Call]

// Protocol is what a driver tells the session.
type Protocol struct {
	Address string
	Slots   int            // streams in flight at most (the connection's concurrency)
	Fields  []h2wire.Field // request header fields
	Body    []byte         // the DATA frame's payload; nil: the request ends with its HEADERS
	Keep    []string       // response fields the outcome reads (Stream.Fields)
	// Outcome judges a finished stream: nil for a success.
	Outcome func(*Stream) error
	// LostCode names the error of requests lost with the connection; nil: netloop.LostCode.
	LostCode func(cause error) string
	// GoingAway is what Received returns once a GOAWAY'd connection has no stream left, so
	// that the loop connects again.
	GoingAway error
	// Handshake says what failed when the server sends no SETTINGS.
	Handshake string
	// TLS, when set, carries the connection over TLS with ALPN h2 (the :scheme is then https).
	TLS *tls.Config
}

// Session is one HTTP/2 connection: a netloop.Session and a loadgen.Conn.
type Session struct {
	p      Protocol
	conn   *netloop.Conn
	h2     h2wire.Client[Call]
	blocks h2wire.HeaderBlocks
}

// New returns a session that is not connected yet (see Connect).
func New(p Protocol, wire *loadgen.WireBytes) *Session {
	if p.TLS != nil {
		p.TLS = loadgen.WithALPN(p.TLS, "h2")
		fields := make([]h2wire.Field, len(p.Fields))
		for i, f := range p.Fields {
			if f.Name == ":scheme" {
				f.Value = "https"
			}
			fields[i] = f
		}
		p.Fields = fields
	}
	s := &Session{p: p, conn: netloop.NewConn(wire)}
	s.conn.TLS = p.TLS
	s.h2.Out = &s.conn.Out
	s.h2.Keep = p.Keep
	return s
}

// NewWorker implements loadgen.Conn: sessions are served by event loops only.
func (s *Session) NewWorker(context.Context) (loadgen.Worker, error) {
	return nil, errors.New("HTTP/2 lean connections are served by event loops")
}

// Close implements loadgen.Conn.
func (s *Session) Close() error { return s.conn.Close() }

// Conn implements netloop.Session.
func (s *Session) Conn() *netloop.Conn { return s.conn }

// Connect implements netloop.Session: the connection, our preface and settings, the server's
// settings. A server that accepts TCP but does not speak HTTP/2 fails here, within ctx.
func (s *Session) Connect(ctx context.Context) error {
	if err := s.conn.Dial(ctx, s.p.Address); err != nil {
		return err
	}
	if err := s.Opening(); err != nil {
		_ = s.conn.Close()
		return err
	}
	return s.conn.Handshake(ctx, s.p.Address, s.p.Handshake, s.Opened)
}

// Opening implements netloop.Opener: on a connected (and secured) socket, our preface and
// settings.
func (s *Session) Opening() error {
	if st, ok := s.conn.TLSState(); ok && st.NegotiatedProtocol != "h2" {
		// HTTP/2 over TLS is what ALPN h2 names (RFC 9113, section 3.2); without it the server
		// would read our preface as HTTP/1.1.
		return &loadgen.TLSError{Address: s.p.Address, Err: fmt.Errorf("the server did not accept ALPN h2 (it chose %q)", st.NegotiatedProtocol)}
	}
	s.h2.Reset()
	return nil
}

// Opened implements netloop.Opener: the server's settings; the request headers are then
// encoded for this connection's header table.
func (s *Session) Opened() (bool, error) {
	n, err := s.h2.Frames(s.conn.In[:s.conn.N])
	s.conn.Consume(n)
	if err != nil || !s.h2.Settled {
		return false, err
	}
	s.blocks = h2wire.EncodeHeaders(s.p.Fields, s.h2.HeaderTableSize())
	return true, nil
}

// Room implements netloop.Session.
func (s *Session) Room() int { return s.h2.Room(s.p.Slots, len(s.p.Body)) }

// Send implements netloop.Session: HEADERS, and DATA with END_STREAM.
func (s *Session) Send(t loadgen.Ticket, now time.Time) error {
	s.h2.Open(&s.blocks, s.p.Body, Call{T: t, Start: now})
	return nil
}

// Inflight implements netloop.Session.
func (s *Session) Inflight() int { return s.h2.Inflight() }

// Received implements netloop.Session.
func (s *Session) Received(p *loadgen.Pipe) error {
	n, err := s.h2.Frames(s.conn.In[:s.conn.N])
	s.conn.Consume(n)
	if len(s.h2.Finished) > 0 {
		end := p.Now()
		for _, st := range s.h2.Finished {
			p.Done(st.Req.T, st.Req.Start, end, s.p.Outcome(st))
			s.h2.Recycle(st)
		}
		s.h2.Finished = s.h2.Finished[:0]
	}
	if err == nil && s.h2.GoingAway && s.h2.Inflight() == 0 {
		err = s.p.GoingAway
	}
	return err
}

// Fail implements netloop.Session: streams that finished before the loss keep their outcome.
func (s *Session) Fail(p *loadgen.Pipe, now time.Time, cause error) {
	code := netloop.LostCode(cause, h2wire.ErrProtocol)
	if s.p.LostCode != nil {
		code = s.p.LostCode(cause)
	}
	lost := loadgen.ConnLost(&loadgen.CodedError{Code: code, Err: cause})
	for _, st := range s.h2.Finished {
		p.Done(st.Req.T, st.Req.Start, now, s.p.Outcome(st))
	}
	s.h2.Finished = s.h2.Finished[:0]
	s.h2.Each(func(st *Stream) { p.Done(st.Req.T, st.Req.Start, now, lost) })
}

// Abandon implements netloop.Session.
func (s *Session) Abandon(p *loadgen.Pipe) {
	s.h2.Each(func(st *Stream) { p.Abandon(st.Req.T) })
}

// Serve runs conns, which must all be Sessions, on one netloop event loop.
func Serve(ctx context.Context, conns []loadgen.Conn, p *loadgen.Pipe) error {
	sessions := make([]netloop.Session, len(conns))
	for i, c := range conns {
		sessions[i] = c.(*Session)
	}
	return netloop.Serve(ctx, sessions, p, netloop.Options{})
}
