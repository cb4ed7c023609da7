package netloop

import (
	"context"
	"crypto/tls"
	"errors"
	"io"
)

// A TLS handshake driven by the loop, for churn (a connection, and so a handshake, every N
// requests). crypto/tls's client handshake is a blocking function, and an error it sees (even
// a temporary one) ends it, so it cannot be resumed after "no data yet" as a read can. So it
// runs on a goroutine of its own, in lock step with the loop, as OpenSSL's non-blocking
// SSL_do_handshake runs inside wrk's: the loop reads ciphertext from the socket into the
// records and hands them over (stepTLS); the handshake consumes them, writes its next flight
// into the records' output and hands back, asking for more or saying it is done; the loop then
// writes that flight and waits for the socket with every other socket. Exactly one of the two
// runs at a time, so the records need no lock, and the loop never waits on the network: it
// waits only for the handshake's computation, which is the client's own work either way.

// errWantInput is what the handshake hands back when it has used all the ciphertext it was given.
var errWantInput = errors.New("netloop: the TLS handshake wants more input")

// errAbandoned ends a handshake the loop gave up (a time-out, or the run's end).
var errAbandoned = errors.New("netloop: TLS handshake abandoned")

// steppedRecords is the net.Conn under a loop-driven handshake: records whose Read, while the
// handshake runs, hands control back to the loop instead of waiting for the socket.
type steppedRecords struct {
	*records
	feed     chan bool  // loop → handshake: more ciphertext in records.in (false: give up)
	yield    chan error // handshake → loop: errWantInput, or the handshake's end (nil or its error)
	stepping bool       // the handshake is running; read by the handshake only
}

func (s *steppedRecords) Read(b []byte) (int, error) {
	for s.stepping && s.off >= len(s.in) {
		s.yield <- errWantInput
		if !<-s.feed {
			return 0, errAbandoned
		}
	}
	return s.records.Read(b)
}

// beginTLS starts the handshake on a connected socket without waiting for the server: when it
// returns, the ClientHello is in the records' output for the loop to write.
func (c *Conn) beginTLS() error {
	c.rec = &records{c: c}
	s := &steppedRecords{records: c.rec, feed: make(chan bool), yield: make(chan error), stepping: true}
	c.tc = tls.Client(s, c.TLS)
	c.step = s
	go func() {
		// No context: a context with a Done channel would cost crypto/tls a goroutine of its own
		// per handshake, and the loop times out handshakes itself (abandonTLS).
		err := c.tc.HandshakeContext(context.Background())
		s.stepping = false
		s.yield <- err
	}()
	done, err := c.awaitStep()
	if done && err == nil {
		// A client never finishes a handshake before the server has spoken.
		err = errors.New("TLS handshake ended before the server answered")
	}
	return err
}

// stepTLS hands the ciphertext read so far (records.fill) to the handshake and waits for it to
// use it. done reports the handshake's end; err is its failure.
func (c *Conn) stepTLS() (done bool, err error) {
	c.step.feed <- true
	return c.awaitStep()
}

func (c *Conn) awaitStep() (bool, error) {
	err := <-c.step.yield
	if errors.Is(err, errWantInput) {
		return false, nil
	}
	c.step = nil
	return true, err
}

// abandonTLS ends a handshake still waiting for the server, so that its goroutine returns.
func (c *Conn) abandonTLS() {
	if c.step != nil {
		c.step.feed <- false
		<-c.step.yield
		c.step = nil
	}
}

// decryptHeld decrypts the whole records already read into In: readTLS's second half, and on its
// own after a stepped handshake, for data the server sent right behind its last flight (such as
// HTTP/2 SETTINGS), which the socket will not announce again. io.EOF is the server's
// close_notify.
func (c *Conn) decryptHeld() error {
	for {
		if c.N == len(c.In) {
			c.In = append(c.In, make([]byte, len(c.In))...)
		}
		n, err := c.tc.Read(c.In[c.N:])
		c.N += n
		switch {
		case err == nil:
		case errors.Is(err, errWouldBlock):
			return nil
		case errors.Is(err, io.EOF):
			return ErrClosed
		default:
			return err
		}
	}
}
