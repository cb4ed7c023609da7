//go:build !linux

package netloop

import "context"

// Peer is a resolved server address (Linux only).
type Peer struct{ Address string }

// Resolve is not available off Linux.
func Resolve(context.Context, string) (*Peer, error) { return nil, errUnsupported }

// StartConnect is not available off Linux.
func (*Peer) StartConnect() (int, error) { return -1, errUnsupported }

// ConnectResult is not available off Linux.
func (*Peer) ConnectResult(int) error { return errUnsupported }

// CloseReset is not available off Linux.
func CloseReset(int) error { return errUnsupported }
