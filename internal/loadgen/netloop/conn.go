package netloop

import (
	"context"
	"fmt"

	"github.com/protobench/protobench/internal/loadgen"
)

// Conn is a session's socket with its output and input buffers. Sessions append requests to Out
// and parse In[:N]; Serve writes and reads.
type Conn struct {
	FD   int
	Out  []byte // bytes waiting to be written
	In   []byte
	N    int // bytes held in In
	Wire *loadgen.WireBytes

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
	return nil
}

// Close closes the socket.
func (c *Conn) Close() error {
	if c.FD < 0 {
		return nil
	}
	err := Close(c.FD)
	c.FD = -1
	return err
}

// Flush writes as much of Out as the socket takes.
func (c *Conn) Flush() error {
	for len(c.Out) > 0 {
		n, err := Write(c.FD, c.Out)
		if n > 0 {
			c.Wire.Sent.Add(int64(n))
			c.Out = c.Out[:copy(c.Out, c.Out[n:])]
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
		for len(c.Out) > 0 {
			if err := c.Flush(); err != nil {
				return fail(err)
			}
			if len(c.Out) > 0 {
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
