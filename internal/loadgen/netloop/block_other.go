//go:build !linux

package netloop

// Block is not available off Linux.
func (p *Poller) Block(dst []Event, _ int) ([]Event, error) { return dst, errUnsupported }
