package netloop

import (
	"context"
	"errors"
	"fmt"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/protobench/protobench/internal/loadgen"
)

// Supported reports whether event loops exist on this platform.
const Supported = true

// Dial connects a non-blocking TCP socket (TCP_NODELAY) to addr within ctx. Failures are
// *loadgen.DialError naming the address.
func Dial(ctx context.Context, addr string) (int, error) {
	fail := func(err error) (int, error) { return -1, &loadgen.DialError{Address: addr, Err: err} }
	// The same resolution churn does once per run (Resolve, connect_linux.go).
	peer, err := Resolve(ctx, addr)
	if err != nil {
		return -1, err
	}
	sa, family := peer.sa, peer.family
	fd, err := unix.Socket(family, unix.SOCK_STREAM|unix.SOCK_NONBLOCK|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return fail(err)
	}
	if err := unix.Connect(fd, sa); err != nil && !errors.Is(err, unix.EINPROGRESS) {
		_ = unix.Close(fd)
		return fail(fmt.Errorf("connect: %w", err))
	}
	if err := WaitFD(ctx, fd, unix.POLLOUT); err != nil {
		_ = unix.Close(fd)
		return fail(fmt.Errorf("no connection within the connect timeout: %w", err))
	}
	if soerr, err := unix.GetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_ERROR); err != nil || soerr != 0 {
		_ = unix.Close(fd)
		if err == nil {
			err = unix.Errno(soerr)
		}
		return fail(fmt.Errorf("connect: %w", err))
	}
	_ = unix.SetsockoptInt(fd, unix.IPPROTO_TCP, unix.TCP_NODELAY, 1)
	return fd, nil
}

// Poll events for WaitFD.
const (
	PollIn  int16 = unix.POLLIN
	PollOut int16 = unix.POLLOUT
)

// WaitFD waits, in short polls that honour ctx, until fd is ready for events (POLLIN, POLLOUT).
// It is for set-up (connecting, a handshake), not for the loop itself.
func WaitFD(ctx context.Context, fd int, events int16) error {
	for {
		if err := ctx.Err(); err != nil {
			return err
		}
		pfd := []unix.PollFd{{Fd: int32(fd), Events: events}}
		n, err := unix.Poll(pfd, 20)
		if err != nil && !errors.Is(err, unix.EINTR) {
			return err
		}
		if n > 0 {
			return nil
		}
	}
}

// Close closes a socket.
func Close(fd int) error { return unix.Close(fd) }

// Read reads from a non-blocking socket. The sockets never block, so the raw system call skips
// the runtime's syscall entry and exit. It returns unix.EAGAIN when nothing is there.
func Read(fd int, p []byte) (int, error) {
	r, _, e := unix.RawSyscall(unix.SYS_READ, uintptr(fd), uintptr(unsafe.Pointer(unsafe.SliceData(p))), uintptr(len(p)))
	if e != 0 {
		return 0, e
	}
	return int(r), nil
}

// Write writes to a non-blocking socket; see Read.
func Write(fd int, p []byte) (int, error) {
	r, _, e := unix.RawSyscall(unix.SYS_WRITE, uintptr(fd), uintptr(unsafe.Pointer(unsafe.SliceData(p))), uintptr(len(p)))
	if e != 0 {
		return 0, e
	}
	return int(r), nil
}

// IsAgain reports whether err means "try again later" (EAGAIN, EINTR).
func IsAgain(err error) bool { return errors.Is(err, unix.EAGAIN) || errors.Is(err, unix.EINTR) }

// Poller is an epoll set. Registered sockets are watched for input, and for output when asked.
type Poller struct {
	ep     int
	events []unix.EpollEvent
}

// NewPoller creates an epoll set with room for n events per wait.
func NewPoller(n int) (*Poller, error) {
	ep, err := unix.EpollCreate1(unix.EPOLL_CLOEXEC)
	if err != nil {
		return nil, err
	}
	return &Poller{ep: ep, events: make([]unix.EpollEvent, max(n, 1))}, nil
}

// Close releases the epoll set.
func (p *Poller) Close() error { return unix.Close(p.ep) }

// Add watches fd for input.
func (p *Poller) Add(fd int) error {
	return unix.EpollCtl(p.ep, unix.EPOLL_CTL_ADD, fd, &unix.EpollEvent{Events: unix.EPOLLIN, Fd: int32(fd)})
}

// WatchOutput switches watching fd for output on or off (it is always watched for input).
func (p *Poller) WatchOutput(fd int, on bool) error {
	ev := uint32(unix.EPOLLIN)
	if on {
		ev |= unix.EPOLLOUT
	}
	return unix.EpollCtl(p.ep, unix.EPOLL_CTL_MOD, fd, &unix.EpollEvent{Events: ev, Fd: int32(fd)})
}

// Event is one ready socket.
type Event struct {
	FD       int
	Readable bool // input, or an error or hang-up that a read will report
	Writable bool
}

// Wait returns the ready sockets, waiting at most a millisecond. A busy loop finds sockets ready
// with a raw, non-blocking call: the runtime's syscall bookkeeping on every round would have its
// monitor thread take the processor back every 20 µs, a context switch each time on the
// generator's core. Only when nothing is ready does it block, and then through the runtime, so
// that the processor runs the process's other goroutines meanwhile. Blocking raw held the
// processor while asleep, and a server in the same process (the tests) starved: under load
// its HTTP/2 connections missed their 2 s SETTINGS deadline (docs/generator.md).
func (p *Poller) Wait(dst []Event) ([]Event, error) { return p.wait(dst, 1) }

// Poll returns the sockets ready now, without waiting.
func (p *Poller) Poll(dst []Event) ([]Event, error) { return p.wait(dst, 0) }

// epollWait is one epoll_pwait. A call that may block goes through the runtime's bookkeeping,
// so that the processor serves other goroutines meanwhile; one that does not (timeout 0) is raw.
func (p *Poller) epollWait(timeoutMs int) (int, error) {
	ev := uintptr(unsafe.Pointer(&p.events[0]))
	var r uintptr
	var e unix.Errno
	if timeoutMs == 0 {
		r, _, e = unix.RawSyscall6(unix.SYS_EPOLL_PWAIT, uintptr(p.ep), ev, uintptr(len(p.events)), 0, 0, 0)
	} else {
		r, _, e = unix.Syscall6(unix.SYS_EPOLL_PWAIT, uintptr(p.ep), ev, uintptr(len(p.events)), uintptr(timeoutMs), 0, 0)
	}
	switch e {
	case 0:
		return int(r), nil
	case unix.EINTR:
		return 0, nil
	}
	return 0, e
}

func (p *Poller) wait(dst []Event, timeoutMs int) ([]Event, error) {
	n, err := p.epollWait(0)
	if err == nil && n == 0 && timeoutMs > 0 {
		n, err = p.epollWait(timeoutMs)
	}
	if err != nil {
		return dst, err
	}
	for _, ev := range p.events[:n] {
		dst = append(dst, Event{
			FD:       int(ev.Fd),
			Readable: ev.Events&(unix.EPOLLIN|unix.EPOLLERR|unix.EPOLLHUP|unix.EPOLLRDHUP) != 0,
			Writable: ev.Events&unix.EPOLLOUT != 0,
		})
	}
	return dst, nil
}
