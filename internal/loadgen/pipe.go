package loadgen

import (
	"context"
	"fmt"
	"time"
)

// runMultiplexed runs one event loop over a group of connections.
func (e *engine) runMultiplexed(group []Conn, depth int, rec *recorder) {
	p := &Pipe{Depth: depth, e: e, rec: rec}
	err := e.driver.(Multiplexer).Serve(e.runCtx, group, p)
	if err != nil && e.runCtx.Err() == nil {
		e.abort(fmt.Errorf("connection lost, reconnecting failed (connect timeout %s): %w", e.cfg.ConnectTimeout, err))
	}
}

// runPipeline runs one pipelined connection, replacing it once if it is lost.
func (e *engine) runPipeline(s slot, depth int, rec *recorder) {
	conn := s.conn
	for {
		p := &Pipe{Depth: depth, e: e, rec: rec}
		err := conn.(Pipeliner).Pipeline(e.runCtx, p)
		if err == nil || e.runCtx.Err() != nil {
			return
		}
		// The connection is gone: try one new one within the connect timeout.
		ctx, cancel := context.WithTimeout(e.runCtx, e.cfg.ConnectTimeout)
		wire := &WireBytes{}
		nc, derr := e.driver.Dial(ctx, s.cfg, wire)
		cancel()
		if derr != nil {
			if e.runCtx.Err() == nil {
				e.abort(fmt.Errorf("connection lost (%v), reconnecting failed (connect timeout %s): %w", err, e.cfg.ConnectTimeout, derr))
			}
			return
		}
		e.mu.Lock()
		e.wires = append(e.wires, wire)
		e.mu.Unlock()
		if conn != s.conn {
			_ = conn.Close()
		}
		conn = nc
		defer nc.Close()
	}
}

// Pipe is a pipelined connection's handle on the run: it claims tickets and records results.
// It belongs to the connection's goroutine.
type Pipe struct {
	// Depth is how many requests the connection keeps in flight.
	Depth int
	e     *engine
	rec   *recorder
}

// Now is the engine's clock.
func (p *Pipe) Now() time.Time { return p.e.clock.Now() }

// Config is the run's configuration.
func (p *Pipe) Config() *Config { return p.e.cfg }

// Claim returns the next ticket, or false when nothing more is to be sent. An open-model ticket
// may be due later than now: send it at Ticket.Intended.
func (p *Pipe) Claim(now time.Time) (Ticket, bool) {
	t, ok := p.e.sched.Claim(now)
	if ok {
		if t.Measured && !p.e.started.Load() {
			p.e.snapshotStart()
		}
		p.rec.inflight.Add(1)
	}
	return t, ok
}

// Done records a claimed ticket's request, sent at start and answered (or failed) at end.
func (p *Pipe) Done(t Ticket, start, end time.Time, err error) {
	p.rec.inflight.Add(-1)
	p.rec.record(t, start, end, err)
}

// Abandon releases a claimed ticket whose request never finished because the run ended.
func (p *Pipe) Abandon(t Ticket) {
	p.rec.inflight.Add(-1)
	p.rec.abandon(t, p.e.clock.Now(), true)
}

// Unsent releases a claimed ticket that was never sent because the run ended: it counts as
// incomplete and unsent, with the latency from its intended time to now (open model).
func (p *Pipe) Unsent(t Ticket) {
	p.rec.inflight.Add(-1)
	p.rec.abandon(t, p.e.clock.Now(), false)
}

// Aborted is closed when the run ends early.
func (p *Pipe) Aborted() <-chan struct{} { return p.e.aborted }
