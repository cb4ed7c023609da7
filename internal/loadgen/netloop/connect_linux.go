package netloop

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"

	"golang.org/x/sys/unix"

	"github.com/protobench/protobench/internal/loadgen"
)

// Peer is a resolved server address that a loop connects to without waiting: churn opens a
// connection per N requests, so the name is resolved once, not per connection.
type Peer struct {
	Address string // as given, for errors
	sa      unix.Sockaddr
	family  int
}

// Resolve resolves addr (host:port) once, within ctx.
func Resolve(ctx context.Context, addr string) (*Peer, error) {
	fail := func(err error) (*Peer, error) { return nil, &loadgen.DialError{Address: addr, Err: err} }
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return fail(err)
	}
	ap, err := netip.ParseAddrPort(net.JoinHostPort(host, port))
	if err != nil {
		ips, lerr := net.DefaultResolver.LookupNetIP(ctx, "ip", host)
		if lerr != nil || len(ips) == 0 {
			return fail(fmt.Errorf("resolving %s: %v", host, lerr))
		}
		p, perr := netip.ParseAddrPort("0.0.0.0:" + port)
		if perr != nil {
			return fail(perr)
		}
		ap = netip.AddrPortFrom(ips[0].Unmap(), p.Port())
	}
	if ap.Addr().Is4() {
		return &Peer{Address: addr, family: unix.AF_INET, sa: &unix.SockaddrInet4{Port: int(ap.Port()), Addr: ap.Addr().As4()}}, nil
	}
	return &Peer{Address: addr, family: unix.AF_INET6, sa: &unix.SockaddrInet6{Port: int(ap.Port()), Addr: ap.Addr().As16()}}, nil
}

// StartConnect opens a non-blocking socket and starts connecting it to the peer: the loop
// watches it for output and calls ConnectResult when it is writable. It never waits.
func (p *Peer) StartConnect() (int, error) {
	fd, err := unix.Socket(p.family, unix.SOCK_STREAM|unix.SOCK_NONBLOCK|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return -1, &loadgen.DialError{Address: p.Address, Err: err}
	}
	if err := unix.Connect(fd, p.sa); err != nil && !errors.Is(err, unix.EINPROGRESS) {
		_ = unix.Close(fd)
		return -1, &loadgen.DialError{Address: p.Address, Err: fmt.Errorf("connect: %w", err)}
	}
	return fd, nil
}

// ConnectResult is the outcome of StartConnect once the socket is writable (or hung up); on
// success it sets TCP_NODELAY, as Dial does.
func (p *Peer) ConnectResult(fd int) error {
	soerr, err := unix.GetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_ERROR)
	if err == nil && soerr != 0 {
		err = unix.Errno(soerr)
	}
	if err != nil {
		return &loadgen.DialError{Address: p.Address, Err: fmt.Errorf("connect: %w", err)}
	}
	_ = unix.SetsockoptInt(fd, unix.IPPROTO_TCP, unix.TCP_NODELAY, 1)
	return nil
}

// CloseReset closes a socket with SO_LINGER 0: the kernel sends RST and forgets the connection
// at once, where a normal close would hold the client's port in TIME_WAIT for 60 s (see
// loadgen.PortBudget for why churn closes this way).
func CloseReset(fd int) error {
	_ = unix.SetsockoptLinger(fd, unix.SOL_SOCKET, unix.SO_LINGER, &unix.Linger{Onoff: 1, Linger: 0})
	return unix.Close(fd)
}
