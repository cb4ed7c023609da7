package engine

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/protobench/protobench/internal/compose"
)

// calls is what every engine that talks to a daemon does around its calls: it remembers the
// run-wide environment given to Up (every compose command interpolates the whole file and needs
// the image references and the raw folder, not only the variables of its own call), bounds
// every call, and when one runs out of time asks whether the daemon still answers; lost then
// ends the run. Each compose engine and Swarm holds one.
type calls struct {
	docker  string
	tracker Tracker
	base    map[string]string

	mu      sync.Mutex
	lostErr error
}

// with is the run-wide environment plus env; env's entries win.
func (s *calls) with(env map[string]string) map[string]string {
	m := make(map[string]string, len(s.base)+len(env))
	for k, v := range s.base {
		m[k] = v
	}
	for k, v := range env {
		m[k] = v
	}
	return m
}

func (s *calls) arm() {
	if s.tracker != nil {
		s.tracker.Arm()
	}
}

func (s *calls) note(id, what string) {
	if s.tracker != nil && id != "" {
		s.tracker.Note(id, what)
	}
}

// bounded runs call with a time limit; on a timeout that is not the caller's own cancellation it
// checks the daemon.
func (s *calls) bounded(ctx context.Context, limit time.Duration, call func(context.Context) error) error {
	if lost := s.lost(); lost != nil {
		// Once the daemon is known to be gone, every call fails at once instead of waiting out
		// its own limit.
		return lost
	}
	cctx, cancel := context.WithTimeout(ctx, limit)
	defer cancel()
	err := call(cctx)
	if err != nil && ctx.Err() == nil && cctx.Err() != nil {
		s.checkDaemon(ctx)
		return fmt.Errorf("no answer within %s: %w", limit, err)
	}
	return err
}

func (s *calls) checkDaemon(ctx context.Context) {
	cctx, cancel := context.WithTimeout(ctx, daemonCheckTimeout)
	defer cancel()
	if _, err := compose.CheckDocker(cctx, s.docker); err != nil && ctx.Err() == nil {
		s.mu.Lock()
		if s.lostErr == nil {
			s.lostErr = err
		}
		s.mu.Unlock()
	}
}

// lost is why the daemon is considered gone, or nil.
func (s *calls) lost() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.lostErr
}

// inspect and logs read a local container, bounded.
func (s *calls) inspect(ctx context.Context, c *compose.Client, id string) (ContainerState, error) {
	var st ContainerState
	err := s.bounded(ctx, CallTimeout, func(ctx context.Context) error {
		var err error
		var cs compose.ContainerState
		cs, err = c.Inspect(ctx, id)
		st = ContainerState(cs)
		return err
	})
	return st, err
}

func (s *calls) logs(ctx context.Context, c *compose.Client, id string) ([]byte, error) {
	var b []byte
	err := s.bounded(ctx, CallTimeout, func(ctx context.Context) error {
		var err error
		b, err = c.Logs(ctx, id)
		return err
	})
	return b, err
}

// probeUntilHealthy runs probe until it passes, every 50 ms at first, up to timeout. gone, asked
// after each failed probe, says why the container will never pass (it exited), or "".
func (s *calls) probeUntilHealthy(ctx context.Context, service string, timeout time.Duration, probe func(context.Context) error, gone func() error) error {
	deadline := time.Now().Add(timeout)
	pause := 50 * time.Millisecond
	var last error
	for {
		err := s.bounded(ctx, CallTimeout, probe)
		if err == nil {
			return nil
		}
		last = err
		if lost := s.lost(); lost != nil {
			return lost
		}
		if err := gone(); err != nil {
			return err
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%s not healthy after %s; last probe: %v", service, timeout, last)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(pause):
		}
		if pause < 500*time.Millisecond {
			pause *= 2
		}
	}
}
