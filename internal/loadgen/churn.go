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
// includes the connect and the handshake, as a client that connects per request sees it. Churn
// runs on each driver's library path (net/http, grpc-go, net/rpc), never on the event loops.

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
