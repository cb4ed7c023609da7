//go:build !linux

package netloop

import (
	"context"
	"errors"
)

// Supported reports whether event loops exist on this platform.
const Supported = false

var errUnsupported = errors.New("event loops need Linux (epoll)")

// Dial is not available off Linux.
func Dial(context.Context, string) (int, error) { return -1, errUnsupported }

// WaitFD is not available off Linux.
func WaitFD(context.Context, int, int16) error { return errUnsupported }

// Close is not available off Linux.
func Close(int) error { return errUnsupported }

// Read is not available off Linux.
func Read(int, []byte) (int, error) { return 0, errUnsupported }

// Write is not available off Linux.
func Write(int, []byte) (int, error) { return 0, errUnsupported }

// IsAgain is false off Linux.
func IsAgain(error) bool { return false }

// Poller is not available off Linux.
type Poller struct{}

// NewPoller is not available off Linux.
func NewPoller(int) (*Poller, error) { return nil, errUnsupported }

// Close is not available off Linux.
func (p *Poller) Close() error { return errUnsupported }

// Add is not available off Linux.
func (p *Poller) Add(int) error { return errUnsupported }

// WatchOutput is not available off Linux.
func (p *Poller) WatchOutput(int, bool) error { return errUnsupported }

// Event is one ready socket.
type Event struct {
	FD       int
	Readable bool
	Writable bool
}

// Wait is not available off Linux.
func (p *Poller) Wait(dst []Event) ([]Event, error) { return dst, errUnsupported }

// Poll is not available off Linux.
func (p *Poller) Poll(dst []Event) ([]Event, error) { return dst, errUnsupported }
