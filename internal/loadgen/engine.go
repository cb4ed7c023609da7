package loadgen

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
	"time"
)

// maxRecorders caps how many workers get a recorder of their own. Beyond it workers share
// recorders round-robin: each recorder holds ~0.5 MB of histograms, and more recorders than a
// few per core buy nothing because only GOMAXPROCS workers run at once.
const maxRecorders = 64

// DefaultDrainTimeout is how long requests still in flight when the schedule ends may take before
// the run cancels them (they are counted as incomplete, not as errors).
const DefaultDrainTimeout = 5 * time.Second

// RunOptions are the engine's hooks; the zero value runs quietly.
type RunOptions struct {
	// Progress, when set, is called about once a second with the run so far.
	Progress func(Progress)
	// Live, when set, is updated about once a second for the live /metrics endpoint.
	Live *LiveMetrics
	// DrainTimeout bounds the wait for requests in flight at the end (default DefaultDrainTimeout,
	// or the request timeout when that is longer).
	DrainTimeout time.Duration
	// Clock defaults to the real clock.
	Clock Clock
}

// Progress is a snapshot of a running load, for the TTY progress line.
type Progress struct {
	Warmup    bool          // still warming up
	Elapsed   time.Duration // into the current phase
	Total     time.Duration // length of the current phase
	RateRPS   float64       // completed requests per second over the last interval
	TargetRPS float64       // open model's target rate now
	Requests  int64         // measured so far
	Errors    int64         // measured so far
	P99Ms     float64       // measured so far (corrected latency)
	Inflight  int64
}

// UsageError is a configuration the driver rejects; the CLI exits 2 on it.
type UsageError struct{ Err error }

func (e *UsageError) Error() string { return e.Err.Error() }
func (e *UsageError) Unwrap() error { return e.Err }

// ErrInterrupted ends a run whose context was cancelled (Ctrl-C): the result is partial.
var ErrInterrupted = errors.New("interrupted")

type engine struct {
	cfg      *Config
	connCfgs []*Config // per connection: cfg, or a copy naming the connection's method of a mix
	driver   Driver
	opts     RunOptions
	clock    Clock
	sched    *Schedule

	runCtx context.Context
	cancel context.CancelFunc

	mu       sync.Mutex
	wires    []*WireBytes // every connection's counters, including replaced ones
	abortErr error
	abortAt  time.Time
	aborted  chan struct{}

	recorders  []*recorder
	goroutines int // workers, pipelines and event loops driving requests

	startOnce sync.Once
	started   atomic.Bool // the measured window's snapshots are taken
	start     windowStart
}

// slot is what a worker or pipeline goroutine drives.
type slot struct {
	conn Conn
	cfg  *Config    // the connection's own configuration: its method, when the run is a mix
	wire *WireBytes // the connection's counters, which a churning slot's new connections share
}

// Run performs one load run. It returns a result whenever the configuration was valid: with the
// error in Result.Error when the target could not be reached or was lost during the run (partial
// results). The error return is non-nil exactly when Result.Error is set, or for a usage error
// (then the result is nil).
func Run(ctx context.Context, cfg *Config, opts RunOptions) (*Result, error) {
	d, ok := Lookup(cfg.Target.Scheme)
	if !ok {
		return nil, &UsageError{fmt.Errorf("--target %q: no driver for scheme %q (have %v)", cfg.Target.URL, cfg.Target.Scheme, Schemes())}
	}
	if err := checkDriver(d, cfg); err != nil {
		return nil, &UsageError{err}
	}
	if opts.Clock == nil {
		opts.Clock = RealClock{}
	}
	if opts.DrainTimeout <= 0 {
		opts.DrainTimeout = max(DefaultDrainTimeout, cfg.RequestTimeout)
	}
	e := &engine{cfg: cfg, driver: d, opts: opts, clock: opts.Clock, aborted: make(chan struct{})}
	conns := cfg.Connections
	if cfg.Churns() {
		conns = churnWorkers(cfg)
	}
	e.connCfgs = make([]*Config, conns)
	methods, err := apportionMix(cfg.Mix, conns)
	if err != nil {
		return nil, &UsageError{err}
	}
	for i := range e.connCfgs {
		e.connCfgs[i] = cfg
		if methods != nil {
			e.connCfgs[i] = cfg.withMethod(methods[i])
		}
	}
	return e.run(ctx)
}

func (e *engine) run(parent context.Context) (*Result, error) {
	cfg := e.cfg
	e.runCtx, e.cancel = context.WithCancel(context.Background())
	defer e.cancel()

	conns, err := e.dialAll(parent)
	if err != nil {
		res := e.failedResult(err)
		return res, err
	}
	if cfg.Churns() {
		for i, c := range conns {
			conns[i] = &onceConn{Conn: c}
		}
	}
	defer func() {
		for _, c := range conns {
			_ = c.Close()
		}
	}()

	// Lay out the goroutines: a multiplexing driver gets one event loop per GOMAXPROCS; a pipelined connection is one goroutine with depth slots; other connections
	// get one goroutine per slot.
	type job struct {
		slot   slot
		worker Worker
		depth  int
		group  []Conn // multiplexed connections served by one loop
	}
	workersTotal := cfg.Connections * cfg.Concurrency
	if cfg.Open() && cfg.MaxInflight > 0 {
		workersTotal = cfg.MaxInflight
	}
	var jobs []job
	if e.multiplexes() {
		loops := min(runtime.GOMAXPROCS(0), len(conns))
		groups := make([][]Conn, loops)
		for i, c := range conns {
			groups[i%loops] = append(groups[i%loops], c)
		}
		for _, g := range groups {
			jobs = append(jobs, job{group: g, depth: len(g) * cfg.Concurrency})
		}
	} else {
		setupCtx, setupCancel := context.WithTimeout(parent, cfg.ConnectTimeout)
		defer setupCancel()
		for i, c := range conns {
			if _, ok := c.(Pipeliner); ok {
				depth := workersTotal / len(conns)
				if i < workersTotal%len(conns) {
					depth++
				}
				if depth > 0 {
					jobs = append(jobs, job{slot: slot{conn: c, cfg: e.connCfgs[i]}, depth: depth})
				}
			}
		}
		for w := 0; w < workersTotal; w++ {
			c, ccfg := conns[w%len(conns)], e.connCfgs[w%len(conns)]
			if _, ok := c.(Pipeliner); ok {
				continue
			}
			wk, err := c.NewWorker(setupCtx)
			if err != nil {
				for _, j := range jobs {
					if j.worker != nil {
						_ = j.worker.Close()
					}
				}
				if setupCtx.Err() != nil && !errors.As(err, new(*DialError)) {
					err = &DialError{Address: cfg.Target.Address, Err: fmt.Errorf("%w (connect timeout %s)", err, cfg.ConnectTimeout)}
				}
				return e.failedResult(err), err
			}
			jobs = append(jobs, job{slot: slot{conn: c, cfg: ccfg, wire: e.wires[w%len(conns)]}, worker: wk})
		}
		setupCancel()
	}

	e.goroutines = len(jobs)
	n := min(len(jobs), maxRecorders)
	for i := 0; i < n; i++ {
		e.recorders = append(e.recorders, newRecorder(cfg.Open()))
	}

	start := e.clock.Now()
	if cfg.Open() {
		e.sched = NewOpenSchedule(e.clock, start, cfg.Warmup, cfg.Pacer)
	} else {
		e.sched = NewClosedSchedule(e.clock, start, cfg.Warmup, cfg.Duration)
	}
	col := newCollector(e, start)
	if cfg.Warmup <= 0 {
		col.markMeasureStart()
	}
	colDone := make(chan struct{})
	colStop := make(chan struct{})
	go func() {
		defer close(colDone)
		col.loop(colStop)
	}()

	// In the open model one pacer goroutine hands tickets to the synchronous workers at their
	// due time; pipelined connections claim their own. Without synchronous workers there is no
	// pacer: it would claim tickets nobody takes and hold the last one until the run is cancelled.
	synchronous := false
	for _, j := range jobs {
		if j.group == nil && j.worker != nil {
			synchronous = true
		}
	}
	var tickets chan Ticket
	dispatched := make(chan struct{})
	if cfg.Open() && synchronous {
		tickets = make(chan Ticket)
		go func() {
			defer close(dispatched)
			e.dispatch(tickets)
		}()
	} else {
		close(dispatched)
	}
	var wg sync.WaitGroup
	for i, j := range jobs {
		rec := e.recorders[i%len(e.recorders)]
		wg.Add(1)
		go func() {
			defer wg.Done()
			switch {
			case j.group != nil:
				e.runMultiplexed(j.group, j.depth, rec)
			case j.worker == nil:
				e.runPipeline(j.slot, j.depth, rec)
			default:
				e.runWorker(j.slot, j.worker, rec, tickets)
			}
		}()
	}
	done := make(chan struct{})
	go func() {
		wg.Wait()
		close(done)
	}()

	drainTimer := time.NewTimer(time.Until(e.sched.End().Add(e.opts.DrainTimeout)))
	defer drainTimer.Stop()
wait:
	for {
		select {
		case <-done:
			break wait
		case <-parent.Done():
			e.abort(ErrInterrupted)
			<-done
			break wait
		case <-drainTimer.C:
			// Requests still in flight this long after the end are cancelled and counted as
			// incomplete; the run must end even if the server never answers.
			e.cancel()
			<-done
			break wait
		}
	}
	// The pacer may still hold a ticket it could not hand out when the run was cancelled: it
	// counts it as unsent before it returns, and the result must include it. Every worker has
	// returned by now, so cancelling releases a pacer still waiting to hand one out.
	e.cancel()
	<-dispatched
	e.abandonUnclaimed(e.clock.Now())
	close(colStop)
	<-colDone
	return e.result(col)
}

// multiplexes reports whether the driver serves this run from event loops: for a mix, only if
// it would serve every method of it that way.
func (e *engine) multiplexes() bool {
	mx, ok := e.driver.(Multiplexer)
	if !ok || e.cfg.Churns() {
		return false
	}
	if len(e.cfg.Mix) == 0 {
		return mx.Multiplexes(e.cfg)
	}
	for _, m := range e.cfg.Mix {
		if !mx.Multiplexes(e.cfg.withMethod(m.Method)) {
			return false
		}
	}
	return true
}

// dialAll opens every connection concurrently within the connect timeout.
func (e *engine) dialAll(parent context.Context) ([]Conn, error) {
	cfg := e.cfg
	ctx, cancel := context.WithTimeout(parent, cfg.ConnectTimeout)
	defer cancel()
	conns := make([]Conn, len(e.connCfgs))
	errs := make([]error, len(e.connCfgs))
	var wg sync.WaitGroup
	for i := range conns {
		wire := &WireBytes{}
		e.wires = append(e.wires, wire)
		wg.Add(1)
		go func() {
			defer wg.Done()
			conns[i], errs[i] = e.driver.Dial(ctx, e.connCfgs[i], wire)
		}()
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		for _, c := range conns {
			if c != nil {
				_ = c.Close()
			}
		}
		// One connection's error says it all; 64 copies of it do not.
		for _, e := range errs {
			if e != nil {
				err = e
				break
			}
		}
		var de *DialError
		if !errors.As(err, &de) {
			err = &DialError{Address: cfg.Target.Address, Err: err}
		}
		if ctx.Err() == context.DeadlineExceeded {
			err = &DialError{Address: cfg.Target.Address, Err: fmt.Errorf("no connection within the connect timeout of %s: %w", cfg.ConnectTimeout, errors.Unwrap(err))}
		}
		return nil, err
	}
	return conns, nil
}

// abort ends the run early: no more tickets, requests in flight are cancelled.
func (e *engine) abort(err error) {
	e.mu.Lock()
	first := e.abortErr == nil
	if first {
		e.abortErr = err
		e.abortAt = e.clock.Now()
	}
	e.mu.Unlock()
	if first {
		e.sched.Stop()
		e.cancel()
		close(e.aborted)
	}
}

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
		if err != nil && IsConnLost(err) {
			_ = w.Close()
			w = nil
			rctx, cancel := context.WithTimeout(ctx, e.cfg.ConnectTimeout)
			w, err = s.conn.NewWorker(rctx)
			cancel()
			if err != nil {
				if ctx.Err() == nil {
					e.abort(fmt.Errorf("connection lost, reconnecting failed (connect timeout %s): %w", e.cfg.ConnectTimeout, err))
				}
				return
			}
		}
	}
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

// Aborted is closed when the run ends early.
func (p *Pipe) Aborted() <-chan struct{} { return p.e.aborted }
