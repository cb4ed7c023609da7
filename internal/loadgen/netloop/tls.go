package netloop

import (
	"context"
	"crypto/tls"
	"io"
	"net"
	"time"
)

// TLS inside the event loop. crypto/tls wants a net.Conn it can block on; the loop owns raw
// non-blocking sockets. So each TLS connection runs crypto/tls over records, a net.Conn made of
// two byte slices: the loop reads ciphertext from the socket into records.in and asks crypto/tls
// for plaintext until records reports that nothing more has come; a session's requests are
// encrypted at flush time, all that is due on the connection as one record, into records.out,
// which the loop writes in one system call as it writes cleartext. Only Dial's handshake blocks
// (records.handshake is set then), in short polls that honour the connect timeout; churn's are
// stepped by the loop (handshake.go).
//
// Why not kernel TLS: it would spare the copies, but needs the kernel's tls module, which this
// project's build machine lacks (docs/tls.md); crypto/tls's AES-GCM is a few per cent of the
// generator's CPU on a multiplexed connection, because a whole batch is one record.

// errWouldBlock is what records.Read returns when no ciphertext is waiting. crypto/tls keeps a
// partial record and its state across a temporary net.Error, as it does across a read deadline.
var errWouldBlock error = wouldBlock{}

type wouldBlock struct{}

func (wouldBlock) Error() string   { return "netloop: no TLS record waiting" }
func (wouldBlock) Timeout() bool   { return true }
func (wouldBlock) Temporary() bool { return true }

// records is the net.Conn beneath a TLS connection of the loop.
type records struct {
	c         *Conn
	in        []byte // ciphertext read from the socket, not yet taken by crypto/tls
	off       int    // what crypto/tls has taken of in
	out       []byte // ciphertext crypto/tls wrote, not yet on the socket
	handshake context.Context
}

// Read gives crypto/tls the ciphertext read so far; during the handshake it waits for the socket.
func (r *records) Read(b []byte) (int, error) {
	if r.off < len(r.in) {
		n := copy(b, r.in[r.off:])
		r.off += n
		if r.off == len(r.in) {
			r.in, r.off = r.in[:0], 0
		}
		return n, nil
	}
	if r.handshake == nil {
		return 0, errWouldBlock
	}
	for {
		if err := r.flushWaiting(); err != nil {
			return 0, err
		}
		n, err := Read(r.c.FD, b)
		switch {
		case err == nil && n == 0:
			return 0, io.EOF
		case err == nil:
			r.c.Wire.Received.Add(int64(n))
			return n, nil
		case !IsAgain(err):
			return 0, err
		}
		if err := WaitFD(r.handshake, r.c.FD, PollIn); err != nil {
			return 0, err
		}
	}
}

// Write keeps crypto/tls's records for the loop to write; during the handshake it writes them.
func (r *records) Write(b []byte) (int, error) {
	r.out = append(r.out, b...)
	if r.handshake != nil {
		if err := r.flushWaiting(); err != nil {
			return 0, err
		}
	}
	return len(b), nil
}

// flushWaiting writes all of out, waiting for the socket (the handshake only).
func (r *records) flushWaiting() error {
	for len(r.out) > 0 {
		if err := r.c.write(&r.out); err != nil {
			return err
		}
		if len(r.out) > 0 {
			if err := WaitFD(r.handshake, r.c.FD, PollOut); err != nil {
				return err
			}
		}
	}
	return nil
}

// fill reads what the socket has into in. It returns ErrClosed at the end of the stream and an
// IsAgain error when nothing is there.
func (r *records) fill() error {
	if r.off > 0 {
		r.in, r.off = r.in[:copy(r.in, r.in[r.off:])], 0
	}
	if cap(r.in)-len(r.in) < initialReadBytes/2 {
		r.in = append(make([]byte, 0, 2*cap(r.in)+initialReadBytes), r.in...)
	}
	n, err := Read(r.c.FD, r.in[len(r.in):cap(r.in)])
	if err != nil {
		return err
	}
	if n == 0 {
		return ErrClosed
	}
	r.c.Wire.Received.Add(int64(n))
	r.in = r.in[:len(r.in)+n]
	return nil
}

// The socket belongs to the Conn; crypto/tls only closes records to interrupt a handshake, which
// WaitFD's context does already.
func (r *records) Close() error                     { return nil }
func (r *records) LocalAddr() net.Addr              { return nil }
func (r *records) RemoteAddr() net.Addr             { return nil }
func (r *records) SetDeadline(time.Time) error      { return nil }
func (r *records) SetReadDeadline(time.Time) error  { return nil }
func (r *records) SetWriteDeadline(time.Time) error { return nil }

// startTLS runs the TLS handshake on the connected socket within ctx.
func (c *Conn) startTLS(ctx context.Context) error {
	c.rec = &records{c: c, handshake: ctx}
	c.tc = tls.Client(c.rec, c.TLS)
	err := c.tc.HandshakeContext(ctx)
	c.rec.handshake = nil
	return err
}

// readTLS reads ciphertext from the socket and decrypts all the whole records it holds into In.
func (c *Conn) readTLS() error {
	if err := c.rec.fill(); err != nil {
		return err
	}
	return c.decryptHeld()
}

// TLSState is the connection's TLS state; ok is false in cleartext.
func (c *Conn) TLSState() (tls.ConnectionState, bool) {
	if c.tc == nil {
		return tls.ConnectionState{}, false
	}
	return c.tc.ConnectionState(), true
}
