package loadgen

import (
	"context"
	"fmt"
	"runtime"
	"time"
)

// dispatch is the open model's pacer: it sends each ticket on out at its intended time. It runs
// on a thread of its own with precise timers. When every worker is busy the send waits, the
// ticket keeps its intended time, and the wait shows up as scheduler lag and in the latency.
func (e *engine) dispatch(out chan<- Ticket) {
	defer close(out)
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	preciseTimers()
	ctx := e.runCtx
	for {
		t, ok := e.sched.Claim(e.clock.Now())
		if !ok {
			return
		}
		if e.clock.SleepUntil(ctx, t.Intended) != nil {
			e.recorders[0].abandon(t, e.clock.Now(), false)
			return
		}
		select {
		case out <- t:
		case <-ctx.Done():
			// Every worker was still busy when the run ended: this ticket was never sent.
			e.recorders[0].abandon(t, e.clock.Now(), false)
			return
		}
	}
}

// runWorker is one synchronous worker: take a ticket, send, record. Tickets come from the pacer
// (open model) or, with tickets nil, are claimed here and waited for (closed model, where they are
// due at once, and the fake-clock tests).
func (e *engine) runWorker(s slot, w Worker, rec *recorder, tickets <-chan Ticket) {
	churn := e.cfg.RequestsPerConnection
	defer func() {
		if w != nil {
			_ = w.Close()
		}
		if churn > 0 && s.conn != nil {
			_ = s.conn.Close()
		}
	}()
	ctx := e.runCtx
	carried := 0 // requests on the slot's connection, when it churns
	for {
		var (
			t   Ticket
			ok  bool
			now time.Time
		)
		if tickets != nil {
			select {
			case t, ok = <-tickets:
			case <-ctx.Done():
			}
			if !ok {
				return
			}
			now = e.clock.Now()
		} else {
			now = e.clock.Now()
			if t, ok = e.sched.Claim(now); !ok {
				return
			}
			if t.Intended.After(now) {
				if e.clock.SleepUntil(ctx, t.Intended) != nil {
					return
				}
				now = e.clock.Now()
			}
		}
		if t.Measured && !e.started.Load() {
			e.snapshotStart()
		}
		rec.inflight.Add(1)
		if churn > 0 && carried >= churn {
			// A new connection for this request, timed as part of it.
			if err := e.recycle(ctx, &s, &w); err != nil {
				rec.inflight.Add(-1)
				rec.abandon(t, e.clock.Now(), false)
				if ctx.Err() == nil {
					e.abort(fmt.Errorf("opening a new connection after %d requests failed (connect timeout %s): %w", churn, e.cfg.ConnectTimeout, err))
				}
				return
			}
			carried = 0
		}
		carried++
		err := e.do(ctx, w)
		end := e.clock.Now()
		rec.inflight.Add(-1)
		if err != nil && ctx.Err() != nil {
			// The run was cancelled under this request: it neither succeeded nor failed.
			rec.abandon(t, end, true)
			return
		}
		rec.record(t, now, end, err)
		if err != nil && IsConnLost(err) && churn > 0 {
			carried = churn // the next request opens a new connection
			continue
		}
		if err != nil && IsConnLost(err) && !e.reconnect(ctx, s.conn, &w) {
			return
		}
	}
}

// reconnect replaces a worker whose connection was lost with a new one on conn, within the
// connect timeout. When it cannot, it aborts the run (unless the run is ending anyway) and
// reports false; *w is then whatever NewWorker returned, for the caller to close.
func (e *engine) reconnect(ctx context.Context, conn Conn, w *Worker) bool {
	_ = (*w).Close()
	*w = nil
	rctx, cancel := context.WithTimeout(ctx, e.cfg.ConnectTimeout)
	nw, err := conn.NewWorker(rctx)
	*w = nw
	cancel()
	if err != nil {
		if ctx.Err() == nil {
			e.abort(fmt.Errorf("connection lost, reconnecting failed (connect timeout %s): %w", e.cfg.ConnectTimeout, err))
		}
		return false
	}
	return true
}

func (e *engine) do(ctx context.Context, w Worker) error {
	if e.cfg.RequestTimeout <= 0 {
		return w.Do(ctx)
	}
	rctx, cancel := context.WithTimeout(ctx, e.cfg.RequestTimeout)
	defer cancel()
	err := w.Do(rctx)
	if err != nil && rctx.Err() == context.DeadlineExceeded && ctx.Err() == nil {
		return &CodedError{Code: CodeTimeout, Err: err}
	}
	return err
}
