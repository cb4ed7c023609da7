package netloop

import (
	"context"
	"crypto/tls"
	"fmt"

	"github.com/protobench/protobench/internal/loadgen"
)

// Conn is a session's socket with its output and input buffers. Sessions append requests to Out
// and parse In[:N]; Serve writes and reads. With TLS set, Out and In hold plaintext and the
// socket carries TLS records (tls.go).
type Conn struct {
	FD   int
	Out  []byte // bytes waiting to be written
	In   []byte
	N    int // bytes held in In
	Wire *loadgen.WireBytes
	// TLS, when set, makes Dial complete a TLS handshake with it; the Wire counts records.
	TLS *tls.Config

	tc   *tls.Conn
	rec  *records
	step *steppedRecords // a handshake the loop drives (handshake.go), until it ends

	watchOut bool // the poller watches for writability
	due      bool // in the loop's due list
}

const initialReadBytes = 64 << 10

// NewConn returns a closed Conn whose traffic is counted in wire.
func NewConn(wire *loadgen.WireBytes) *Conn { return &Conn{FD: -1, Wire: wire} }

// Dial connects to addr within ctx, dropping anything left in the buffers.
func (c *Conn) Dial(ctx context.Context, addr string) error {
	fd, err := Dial(ctx, addr)
	if err != nil {
		return err
	}
	c.FD = fd
	c.Out, c.N = c.Out[:0], 0
	if c.In == nil {
		c.In = make([]byte, initialReadBytes)
	}
	if c.TLS == nil {
		return nil
	}
	if err := c.startTLS(ctx); err != nil {
		_ = c.Close()
		return &loadgen.TLSError{Address: addr, Err: err}
	}
	return nil
}

// Close closes the socket.
func (c *Conn) Close() error {
	if c.FD < 0 {
		return nil
	}
	err := Close(c.FD)
	c.FD, c.tc, c.rec = -1, nil, nil
	return err
}

// Pending reports whether output waits to be written (requests, or over TLS their records).
func (c *Conn) Pending() bool { return len(c.Out) > 0 || (c.rec != nil && len(c.rec.out) > 0) }

// Flush writes as much of the output as the socket takes; over TLS it first encrypts all of Out
// as one record (crypto/tls splits what exceeds a record's 16 KiB).
func (c *Conn) Flush() error {
	if c.tc == nil {
		return c.write(&c.Out)
	}
	if len(c.Out) > 0 {
		if _, err := c.tc.Write(c.Out); err != nil {
			return err
		}
		c.Out = c.Out[:0]
	}
	return c.write(&c.rec.out)
}

// write writes as much of *buf as the socket takes and keeps the rest in *buf.
func (c *Conn) write(buf *[]byte) error {
	for len(*buf) > 0 {
		n, err := Write(c.FD, *buf)
		if n > 0 {
			c.Wire.Sent.Add(int64(n))
			*buf = (*buf)[:copy(*buf, (*buf)[n:])]
		}
		if err != nil {
			if IsAgain(err) {
				return nil
			}
			return err
		}
	}
	return nil
}

// ReadOnce reads what has arrived after In[:N], growing In when it is full. It returns ErrClosed
// at the end of the stream and an IsAgain error when nothing is there.
func (c *Conn) ReadOnce() error {
	if c.In == nil {
		c.In = make([]byte, initialReadBytes)
	}
	if c.tc != nil {
		return c.readTLS()
	}
	if c.N == len(c.In) {
		c.In = append(c.In, make([]byte, len(c.In))...)
	}
	n, err := Read(c.FD, c.In[c.N:])
	if err != nil {
		return err
	}
	if n == 0 {
		return ErrClosed
	}
	c.Wire.Received.Add(int64(n))
	c.N += n
	return nil
}

// Consume drops the first n bytes of In[:N].
func (c *Conn) Consume(n int) {
	if n > 0 {
		c.N = copy(c.In, c.In[n:c.N])
	}
}

// Handshake writes all of Out, then reads until done reports the handshake complete, all within
// ctx. done parses In[:N] (consuming what it uses) and may append answers to Out. A failure is a
// *loadgen.DialError naming addr and what did not happen (what), and closes the socket.
func (c *Conn) Handshake(ctx context.Context, addr, what string, done func() (bool, error)) error {
	fail := func(err error) error {
		_ = c.Close()
		return &loadgen.DialError{Address: addr, Err: fmt.Errorf("%s: %w", what, err)}
	}
	for {
		for c.Pending() {
			if err := c.Flush(); err != nil {
				return fail(err)
			}
			if c.Pending() {
				if err := WaitFD(ctx, c.FD, PollOut); err != nil {
					return fail(err)
				}
			}
		}
		ok, err := done()
		if err != nil {
			return fail(err)
		}
		if ok {
			return nil
		}
		if err := WaitFD(ctx, c.FD, PollIn); err != nil {
			return fail(fmt.Errorf("no answer from the server: %w", err))
		}
		if err := c.ReadOnce(); err != nil && !IsAgain(err) {
			return fail(err)
		}
	}
}
