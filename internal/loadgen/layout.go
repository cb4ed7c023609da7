package loadgen

import (
	"context"
	"errors"
	"fmt"
	"runtime"
)

// job is one goroutine driving requests: an event loop over a group of multiplexed
// connections, a pipelined connection with depth slots, or one synchronous worker.
type job struct {
	slot   slot
	worker Worker
	depth  int
	group  []Conn // multiplexed connections served by one loop
}

// layOut lays out the goroutines: a multiplexing driver gets one event loop per GOMAXPROCS; a
// pipelined connection is one goroutine with depth slots; other connections get one goroutine
// per slot.
func (e *engine) layOut(parent context.Context, conns []Conn) ([]job, error) {
	if e.multiplexes() {
		return e.loopJobs(conns), nil
	}
	return e.connJobs(parent, conns)
}

// slotsTotal is how many requests the run keeps in flight at most.
func (e *engine) slotsTotal() int {
	cfg := e.cfg
	if cfg.Open() && cfg.MaxInflight > 0 {
		return cfg.MaxInflight
	}
	return cfg.Connections * cfg.Concurrency
}

// loopJobs deals the multiplexed connections round-robin to the event loops.
func (e *engine) loopJobs(conns []Conn) []job {
	cfg := e.cfg
	loops := min(runtime.GOMAXPROCS(0), len(conns))
	if cfg.Open() && cfg.MaxInflight > 0 {
		loops = min(loops, cfg.MaxInflight) // every loop may keep at least one in flight
	}
	groups := make([][]Conn, loops)
	for i, c := range conns {
		groups[i%loops] = append(groups[i%loops], c)
	}
	var jobs []job
	for i, g := range groups {
		depth := len(g) * e.connCfgs[0].Concurrency
		if cfg.Open() && cfg.MaxInflight > 0 {
			// --max-inflight caps the open model's requests in flight, shared by the loops.
			depth = cfg.MaxInflight / loops
			if i < cfg.MaxInflight%loops {
				depth++
			}
		}
		jobs = append(jobs, job{group: g, depth: depth})
	}
	return jobs
}

// connJobs gives each pipelined connection its share of the slots, and every other slot a
// worker of its own, opened within the connect timeout.
func (e *engine) connJobs(parent context.Context, conns []Conn) ([]job, error) {
	setupCtx, setupCancel := context.WithTimeout(parent, e.cfg.ConnectTimeout)
	defer setupCancel()
	jobs := e.pipelineJobs(conns)
	total := e.slotsTotal()
	for w := 0; w < total; w++ {
		c, ccfg := conns[w%len(conns)], e.connCfgs[w%len(conns)]
		if _, ok := c.(Pipeliner); ok {
			continue
		}
		wk, err := c.NewWorker(setupCtx)
		if err != nil {
			closeWorkers(jobs)
			return nil, e.workerSetupError(setupCtx, err)
		}
		jobs = append(jobs, job{slot: slot{conn: c, cfg: ccfg, wire: e.wires[w%len(conns)]}, worker: wk})
	}
	return jobs, nil
}

// pipelineJobs spreads the slots evenly over the connections and gives each pipelined one a job
// with its share.
func (e *engine) pipelineJobs(conns []Conn) []job {
	total := e.slotsTotal()
	var jobs []job
	for i, c := range conns {
		if _, ok := c.(Pipeliner); ok {
			depth := total / len(conns)
			if i < total%len(conns) {
				depth++
			}
			if depth > 0 {
				jobs = append(jobs, job{slot: slot{conn: c, cfg: e.connCfgs[i]}, depth: depth})
			}
		}
	}
	return jobs
}

// workerSetupError is the error of a worker that could not be opened: a timeout says which.
func (e *engine) workerSetupError(setupCtx context.Context, err error) error {
	cfg := e.cfg
	if setupCtx.Err() != nil && !errors.As(err, new(*DialError)) {
		err = &DialError{Address: cfg.Target.Address, Err: fmt.Errorf("%w (connect timeout %s)", err, cfg.ConnectTimeout)}
	}
	return err
}

// closeWorkers closes the workers of jobs that never started.
func closeWorkers(jobs []job) {
	for _, j := range jobs {
		if j.worker != nil {
			_ = j.worker.Close()
		}
	}
}
