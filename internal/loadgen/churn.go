package loadgen

import (
	"context"
	"fmt"
	"sync"
)

// Connection churn (--requests-per-connection N): each connection carries N requests, is closed,
// and a new one takes its place, so that the cost of opening connections (TCP, and the TLS
// handshake over TLS) shows in the server's CPU and in the latency. Without it (N = 0, the
// default) connections are reused for the whole run.
//
// A churning run gives every request in flight a connection of its own (connections ×
// concurrency of them, or --max-inflight in the open model): a connection that carries N requests
// cannot hold more than N in flight, and one owner per connection makes "N requests, then close"
// exact. The new connection is opened when the next request is due, so that request's latency
// includes the connect and the handshake, as a client that connects per request sees it.
//
// In the closed model churn runs on the drivers' event loops (netloop/churn.go), where a
// connect and a TLS handshake never block the loop; in the open model, and with a driver's
// library client forced, it runs on the library paths (net/http, grpc-go, net/rpc) here.

// Churner is a driver that can churn connections. Redial opens a connection as Dial does but
// skips Dial's reachability probe (a plain TCP dial, or over TLS a handshake of its own), which
// would add a connection to every one the run measures.
type Churner interface {
	Redial(ctx context.Context, cfg *Config, wire *WireBytes) (Conn, error)
}

// Churns reports whether connections carry a bounded number of requests.
func (c *Config) Churns() bool { return c.RequestsPerConnection > 0 }

// checkChurn refuses churn for a driver that cannot redial, with the driver's reason.
func checkChurn(d Driver, cfg *Config) error {
	if !cfg.Churns() {
		return nil
	}
	if _, ok := d.(Churner); ok {
		return nil
	}
	why := d.Info().NoChurn
	if why == "" {
		why = "its driver cannot open connections on demand"
	}
	return fmt.Errorf("--requests-per-connection: %s:// cannot churn connections: %s", cfg.Target.Scheme, why)
}

// churnWorkers is how many workers a churning run has, and so how many connections it opens at
// once: one per request in flight.
func churnWorkers(cfg *Config) int {
	if cfg.Open() && cfg.MaxInflight > 0 {
		return cfg.MaxInflight
	}
	return cfg.Connections * cfg.Concurrency
}

// onceConn closes its connection once: a churning worker closes its first connection when it
// has carried its requests, and the run closes every first connection again at the end.
type onceConn struct {
	Conn
	once sync.Once
	err  error
}

func (c *onceConn) Close() error {
	c.once.Do(func() { c.err = c.Conn.Close() })
	return c.err
}

// recycle closes the slot's worker and connection and opens a new connection with a worker on
// it, within the connect timeout.
func (e *engine) recycle(ctx context.Context, s *slot, w *Worker) error {
	if *w != nil {
		_ = (*w).Close()
		*w = nil
	}
	if s.conn != nil {
		_ = s.conn.Close()
		s.conn = nil
	}
	rctx, cancel := context.WithTimeout(ctx, e.cfg.ConnectTimeout)
	defer cancel()
	c, err := e.driver.(Churner).Redial(rctx, s.cfg, s.wire)
	if err != nil {
		return err
	}
	nw, err := c.NewWorker(rctx)
	if err != nil {
		_ = c.Close()
		return err
	}
	s.conn, *w = c, nw
	return nil
}

// churnsOnLoops reports whether a churning run may be served by event loops: in the closed
// model, where every ticket is due when it is claimed. (The loop's churn sends a ticket as soon
// as its connection is open; the open model's pacing is the workers'.)
func churnsOnLoops(cfg *Config) bool { return !cfg.Open() }

// churnConnConfig is the configuration each connection of a run is dialled with: for a churning
// run, one request in flight per connection (see above); otherwise cfg itself.
func churnConnConfig(cfg *Config) *Config {
	if !cfg.Churns() || cfg.Concurrency == 1 {
		return cfg
	}
	cp := *cfg
	cp.Concurrency = 1
	return &cp
}

// checkPorts refuses a churning run that would run out of ephemeral ports (ports.go).
func (e *engine) checkPorts() error {
	if !e.cfg.Churns() {
		return nil
	}
	return portPlan(e.cfg, e.multiplexes()).Check()
}
