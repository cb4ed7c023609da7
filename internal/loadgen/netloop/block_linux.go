package netloop

import (
	"errors"

	"golang.org/x/sys/unix"
)

// Block returns the ready sockets, waiting at most timeoutMs, through the runtime's syscall
// entry, which lets the processor go to other goroutines while the thread sleeps in the kernel.
// The open model's loops wait this way: at a paced rate they are idle most of the time, and
// Wait's raw system call would hold a processor for the whole wait (with GOMAXPROCS loops,
// every one), starving the collector and, in tests, the very server the run measures.
func (p *Poller) Block(dst []Event, timeoutMs int) ([]Event, error) {
	n, err := unix.EpollWait(p.ep, p.events, timeoutMs)
	if err != nil {
		if errors.Is(err, unix.EINTR) {
			return dst, nil
		}
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
