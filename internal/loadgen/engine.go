package loadgen

import (
	"context"
	"errors"
	"fmt"
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
	// StartAt, when set, is the shared start (--start-at, startat.go): the run opens its
	// connections, then waits for it before its warm-up.
	StartAt time.Time
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
	shared    sharedStart // the wait for RunOptions.StartAt
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
	if err := e.checkPorts(); err != nil {
		return nil, &UsageError{err}
	}
	conns := cfg.Connections
	if cfg.Churns() {
		conns = churnWorkers(cfg)
	}
	e.connCfgs = make([]*Config, conns)
	methods, err := apportionMix(cfg.Mix, conns)
	if err != nil {
		return nil, &UsageError{err}
	}
	base := churnConnConfig(cfg)
	for i := range e.connCfgs {
		e.connCfgs[i] = base
		if methods != nil {
			e.connCfgs[i] = base.withMethod(methods[i])
		}
	}
	return e.run(ctx)
}

// run drives one run through its phases: connect, lay out the goroutines, wait for the shared
// start, measure (warm-up and window, ticked by the collector), drain, and read the result.
func (e *engine) run(parent context.Context) (*Result, error) {
	e.runCtx, e.cancel = context.WithCancel(context.Background())
	defer e.cancel()

	conns, err := e.dialAll(parent)
	if err != nil {
		return e.failedResult(err), err
	}
	if e.cfg.Churns() && !e.multiplexes() {
		for i, c := range conns {
			conns[i] = &onceConn{Conn: c}
		}
	}
	defer closeConns(conns)

	jobs, err := e.layOut(parent, conns)
	if err != nil {
		return e.failedResult(err), err
	}
	e.goroutines = len(jobs)
	n := min(len(jobs), maxRecorders)
	for i := 0; i < n; i++ {
		e.recorders = append(e.recorders, newRecorder(e.cfg.Open()))
	}

	if err := e.waitForStart(parent); err != nil {
		closeWorkers(jobs)
		return e.failedResult(err), err
	}
	col, stopCollector := e.startSchedule()
	tickets, dispatched := e.startPacer(jobs)
	e.awaitJobs(parent, e.startJobs(jobs, tickets))
	// The pacer may still hold a ticket it could not hand out when the run was cancelled: it
	// counts it as unsent before it returns, and the result must include it. Every worker has
	// returned by now, so cancelling releases a pacer still waiting to hand one out.
	e.cancel()
	<-dispatched
	e.abandonUnclaimed(e.clock.Now())
	stopCollector()
	return e.result(col)
}

func closeConns(conns []Conn) {
	for _, c := range conns {
		_ = c.Close()
	}
}

// startSchedule fixes the run's start, so it comes after the connections and the shared start,
// and starts the collector ticking from it; stop ends the collector after its last tick.
func (e *engine) startSchedule() (col *collector, stop func()) {
	cfg := e.cfg
	start := e.clock.Now()
	if cfg.Open() {
		e.sched = NewOpenSchedule(e.clock, start, cfg.Warmup, cfg.Pacer)
	} else {
		e.sched = NewClosedSchedule(e.clock, start, cfg.Warmup, cfg.Duration)
	}
	col = newCollector(e, start)
	if cfg.Warmup <= 0 {
		col.markMeasureStart()
	}
	colDone := make(chan struct{})
	colStop := make(chan struct{})
	go func() {
		defer close(colDone)
		col.loop(colStop)
	}()
	return col, func() {
		close(colStop)
		<-colDone
	}
}

// startPacer starts the open model's pacer: one goroutine that hands tickets to the synchronous
// workers at their due time; pipelined connections claim their own. Without synchronous workers
// there is no pacer: it would claim tickets nobody takes and hold the last one until the run is
// cancelled. dispatched is closed once the pacer has returned (at once when there is none).
func (e *engine) startPacer(jobs []job) (tickets chan Ticket, dispatched <-chan struct{}) {
	synchronous := false
	for _, j := range jobs {
		if j.group == nil && j.worker != nil {
			synchronous = true
		}
	}
	done := make(chan struct{})
	if e.cfg.Open() && synchronous {
		tickets = make(chan Ticket)
		go func() {
			defer close(done)
			e.dispatch(tickets)
		}()
	} else {
		close(done)
	}
	return tickets, done
}

// startJobs starts a goroutine for every job; the channel is closed when they have all returned.
func (e *engine) startJobs(jobs []job, tickets chan Ticket) <-chan struct{} {
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
	return done
}

// awaitJobs waits for the jobs to end by themselves, or ends them: at an interrupt, or once the
// drain timeout after the schedule's end has passed.
func (e *engine) awaitJobs(parent context.Context, done <-chan struct{}) {
	drainTimer := time.NewTimer(time.Until(e.sched.End().Add(e.opts.DrainTimeout)))
	defer drainTimer.Stop()
	select {
	case <-done:
	case <-parent.Done():
		e.abort(ErrInterrupted)
		<-done
	case <-drainTimer.C:
		// Requests still in flight this long after the end are cancelled and counted as
		// incomplete; the run must end even if the server never answers.
		e.cancel()
		<-done
	}
}

// multiplexes reports whether the driver serves this run from event loops: for a mix, only if
// it would serve every method of it that way.
func (e *engine) multiplexes() bool {
	mx, ok := e.driver.(Multiplexer)
	if !ok || (e.cfg.Churns() && !churnsOnLoops(e.cfg)) {
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
