package prom

import (
	"context"
	"fmt"
	"net/http"
	"sync"
	"time"
)

// ProbeTimeout bounds the readiness probe that stands before every query while Prometheus is
// not answering.
const ProbeTimeout = time.Second

// health remembers that Prometheus stopped answering. A run reads its figures in a few dozen
// queries, one after another; with Prometheus paused or gone, each would wait out the client's
// whole timeout (10 s), minutes for a run's figures that cannot come. While it is down, a query
// first asks the readiness endpoint, which answers in a millisecond when Prometheus is back, and
// fails at once when it is not. A query the caller cancelled says nothing of Prometheus.
type health struct {
	mu   sync.Mutex
	down error // why the last query got no answer; nil while Prometheus answers
}

// do sends req unless Prometheus is known down and still fails its readiness probe.
func (c *Client) do(req *http.Request) (*http.Response, error) {
	if c.health != nil {
		if err := c.health.probe(req.Context(), c); err != nil {
			return nil, err
		}
	}
	resp, err := c.HTTP.Do(req)
	if c.health != nil {
		c.health.note(req.Context(), err)
	}
	return resp, err
}

func (h *health) note(ctx context.Context, err error) {
	if err != nil && ctx.Err() != nil {
		return
	}
	h.mu.Lock()
	h.down = err
	h.mu.Unlock()
}

// probe returns nil when Prometheus is up, or when it was down and is ready again; otherwise an
// error that names both failures.
func (h *health) probe(ctx context.Context, c *Client) error {
	h.mu.Lock()
	down := h.down
	h.mu.Unlock()
	if down == nil {
		return nil
	}
	pctx, cancel := context.WithTimeout(ctx, ProbeTimeout)
	defer cancel()
	err := c.readyOnce(pctx)
	if err == nil {
		h.note(ctx, nil)
		return nil
	}
	if ctx.Err() != nil {
		return ctx.Err()
	}
	return &unreachableError{fmt.Errorf("prometheus at %s is not answering (earlier: %v; its readiness check within %s: %w)", c.BaseURL, down, ProbeTimeout, err)}
}
