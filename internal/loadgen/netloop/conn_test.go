//go:build linux

package netloop

import (
	"context"
	"errors"
	"io"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/protobench/protobench/internal/loadgen"
)

// A Conn against a real TCP peer: what is flushed arrives and is counted, what the peer sends is
// read and counted, a handshake completes on the peer's answer, and the peer's close is ErrClosed.
func TestConnAgainstAPeer(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	got := make(chan string, 1)
	go func() {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		buf := make([]byte, 5)
		if _, err := io.ReadFull(c, buf); err != nil {
			got <- err.Error()
			return
		}
		got <- string(buf)
		_, _ = c.Write([]byte("world"))
		time.Sleep(50 * time.Millisecond)
		_ = c.Close()
	}()
	var wire loadgen.WireBytes
	c := NewConn(&wire)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := c.Dial(ctx, ln.Addr().String()); err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.Out = append(c.Out, "hello"...)
	err = c.Handshake(ctx, ln.Addr().String(), "no greeting", func() (bool, error) {
		return c.N >= 5, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if s := <-got; s != "hello" {
		t.Fatalf("peer read %q, want hello", s)
	}
	if string(c.In[:c.N]) != "world" || wire.Sent.Load() != 5 || wire.Received.Load() != 5 {
		t.Fatalf("read %q, counted %d sent %d received", c.In[:c.N], wire.Sent.Load(), wire.Received.Load())
	}
	c.Consume(2)
	if string(c.In[:c.N]) != "rld" {
		t.Fatalf("after consuming 2: %q", c.In[:c.N])
	}
	for {
		if err := WaitFD(ctx, c.FD, PollIn); err != nil {
			t.Fatal(err)
		}
		err := c.ReadOnce()
		if errors.Is(err, ErrClosed) {
			break
		}
		if err != nil && !IsAgain(err) {
			t.Fatalf("read: %v, want ErrClosed at the peer's close", err)
		}
	}
}

// A handshake the peer never answers fails within the context, naming the address and what was
// awaited, and closes the socket.
func TestHandshakeTimesOut(t *testing.T) {
	addr := silentPeer(t, time.Second)
	c := NewConn(&loadgen.WireBytes{})
	// The dial has time to spare on a loaded machine; only the handshake gets the short deadline.
	dialCtx, cancelDial := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancelDial()
	if err := c.Dial(dialCtx, addr); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	err := c.Handshake(ctx, addr, "no SETTINGS", func() (bool, error) { return false, nil })
	var de *loadgen.DialError
	if !errors.As(err, &de) || de.Address != addr || !strings.Contains(err.Error(), "no SETTINGS") {
		t.Fatalf("err %v, want a DialError naming %s and what was awaited", err, addr)
	}
	if c.FD != -1 {
		t.Error("the socket was left open")
	}
}

// Dialling a port nobody listens on fails with the system's reason, naming the address.
func TestDialRefused(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	c := NewConn(&loadgen.WireBytes{})
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	err = c.Dial(ctx, addr)
	var de *loadgen.DialError
	if !errors.As(err, &de) || de.Address != addr || !strings.Contains(err.Error(), "refused") {
		t.Fatalf("err %v, want connection refused naming %s", err, addr)
	}
}

// silentPeer listens on loopback, accepts one connection and holds it for hold without a word.
func silentPeer(t *testing.T, hold time.Duration) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		if c, err := ln.Accept(); err == nil {
			defer c.Close()
			time.Sleep(hold)
		}
	}()
	return ln.Addr().String()
}
