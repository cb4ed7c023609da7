package runner

import (
	"context"
	"os"
	"os/signal"
	"sync"
	"syscall"
)

// Exit statuses of a run stopped by a signal: 128 + the signal's number, as shells report it.
const (
	ExitInterrupted = 130 // SIGINT (Ctrl-C)
	ExitTerminated  = 143 // SIGTERM
	ExitHangup      = 129 // SIGHUP (the terminal went away)
)

// signals turns SIGINT, SIGTERM and SIGHUP into two stages: the first cancels run (the run
// stops, writes what it has and cleans up gracefully), the second cancels hurry (cleanup skips
// its graceful parts).
type signals struct {
	run, hurry     context.Context
	cancelRun      context.CancelFunc
	cancelHurry    context.CancelFunc
	ch             chan os.Signal
	done           chan struct{}
	mu             sync.Mutex
	first          os.Signal
	count          int
	onFirst, onSec func(os.Signal)
}

func catchSignals(parent context.Context, onFirst, onSecond func(os.Signal)) *signals {
	s := &signals{ch: make(chan os.Signal, 4), done: make(chan struct{}), onFirst: onFirst, onSec: onSecond}
	// The run is not tied to parent's cancellation: main cancels parent on SIGINT and SIGTERM
	// too, and this handler must see which signal it was (and SIGHUP, which main ignores).
	s.run, s.cancelRun = context.WithCancel(context.WithoutCancel(parent))
	s.hurry, s.cancelHurry = context.WithCancel(context.WithoutCancel(parent))
	signal.Notify(s.ch, syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP)
	go func() {
		for {
			select {
			case <-s.done:
				return
			case <-parent.Done():
				// Cancelled from outside without a signal reaching us (a test, an embedding
				// program): stop the run as for a first signal.
				s.cancelRun()
				parent = context.Background()
			case sig := <-s.ch:
				s.mu.Lock()
				s.count++
				n := s.count
				if n == 1 {
					s.first = sig
				}
				s.mu.Unlock()
				if n == 1 {
					if s.onFirst != nil {
						s.onFirst(sig)
					}
					s.cancelRun()
				} else if n == 2 {
					if s.onSec != nil {
						s.onSec(sig)
					}
					s.cancelHurry()
				}
			}
		}
	}()
	return s
}

func (s *signals) stop() {
	signal.Stop(s.ch)
	close(s.done)
	s.cancelRun()
	s.cancelHurry()
}

// received is the first signal, or nil.
func (s *signals) received() os.Signal {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.first
}

// exitCode is the status for a run stopped by sig: 130, 143 or 129; 0 for no signal.
func exitCode(sig os.Signal) int {
	switch sig {
	case syscall.SIGINT:
		return ExitInterrupted
	case syscall.SIGTERM:
		return ExitTerminated
	case syscall.SIGHUP:
		return ExitHangup
	}
	return 0
}

func signalName(sig os.Signal) string {
	switch sig {
	case syscall.SIGINT:
		return "SIGINT"
	case syscall.SIGTERM:
		return "SIGTERM"
	case syscall.SIGHUP:
		return "SIGHUP"
	}
	return sig.String()
}
