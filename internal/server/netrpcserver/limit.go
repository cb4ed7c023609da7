package netrpcserver

import (
	"fmt"
	"net"
	"time"
)

// limitedConn guards a connection's gob stream, which net/rpc decodes with no limits of its own:
// gob allocates whatever length a message declares (up to 8 GiB) and then waits, forever, for
// that many bytes. It follows gob's framing (every message is an unsigned length, then that many
// bytes) as bytes pass through Read, and fails the read, so that net/rpc closes the connection,
// when a message declares more than maxMessage bytes or when a message that has begun does not
// arrive whole within timeout. A connection idle between messages has no deadline.
type limitedConn struct {
	net.Conn
	maxMessage uint64
	timeout    time.Duration

	remaining uint64 // bytes of the current message's body still to come
	lenBytes  int    // bytes of a multi-byte length still to come
	length    uint64 // the length being assembled
	started   uint64 // messages begun so far
	deadline  uint64 // the message (by started) whose deadline is armed; 0 = none armed
}

func (c *limitedConn) Read(p []byte) (int, error) {
	n, err := c.Conn.Read(p)
	if serr := c.scan(p[:n]); serr != nil {
		return 0, serr
	}
	if c.timeout > 0 {
		c.armDeadline()
	}
	return n, err
}

// inMessage reports whether a message has begun and not yet fully arrived.
func (c *limitedConn) inMessage() bool { return c.remaining > 0 || c.lenBytes > 0 }

// armDeadline gives a message that is still incomplete timeout from the read that began it, and
// lifts the deadline once it is complete. Most messages arrive in the read that begins them, so
// the common case touches no deadline at all.
func (c *limitedConn) armDeadline() {
	switch {
	case c.inMessage() && c.deadline != c.started:
		c.deadline = c.started
		c.Conn.SetReadDeadline(time.Now().Add(c.timeout))
	case !c.inMessage() && c.deadline != 0:
		c.deadline = 0
		c.Conn.SetReadDeadline(time.Time{})
	}
}

// scan advances the framing state over b. gob encodes an unsigned integer below 128 as that one
// byte, and a larger one as its byte count negated (one byte) followed by that many big-endian
// bytes.
func (c *limitedConn) scan(b []byte) error {
	for len(b) > 0 {
		switch {
		case c.remaining > 0:
			skip := min(c.remaining, uint64(len(b)))
			c.remaining -= skip
			b = b[skip:]
		case c.lenBytes > 0:
			c.length = c.length<<8 | uint64(b[0])
			c.lenBytes--
			b = b[1:]
			if c.lenBytes == 0 {
				if err := c.begin(c.length); err != nil {
					return err
				}
			}
		default:
			c.started++
			first := b[0]
			b = b[1:]
			if first < 0x80 {
				if err := c.begin(uint64(first)); err != nil {
					return err
				}
				continue
			}
			n := 256 - int(first)
			if n > 8 {
				return fmt.Errorf("gob: message length prefix 0x%02x is not an unsigned integer", first)
			}
			c.lenBytes, c.length = n, 0
		}
	}
	return nil
}

func (c *limitedConn) begin(length uint64) error {
	if length > c.maxMessage {
		return fmt.Errorf("gob: message of %d bytes exceeds the limit of %d", length, c.maxMessage)
	}
	c.remaining = length
	return nil
}
