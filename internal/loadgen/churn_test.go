package loadgen

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// churnDriver is an in-process driver that counts the requests each of its connections carries.
type churnDriver struct {
	mu      sync.Mutex
	conns   []*churnConn
	redials atomic.Int64
}

func (d *churnDriver) Info() DriverInfo {
	return DriverInfo{TargetName: "fake", Methods: []string{"GetUser"}}
}
func (d *churnDriver) Check(cfg *Config) error { cfg.Method = "GetUser"; return nil }
func (d *churnDriver) Dial(context.Context, *Config, *WireBytes) (Conn, error) {
	c := &churnConn{}
	d.mu.Lock()
	d.conns = append(d.conns, c)
	d.mu.Unlock()
	return c, nil
}

func (d *churnDriver) Redial(ctx context.Context, cfg *Config, w *WireBytes) (Conn, error) {
	d.redials.Add(1)
	return d.Dial(ctx, cfg, w)
}

type churnConn struct {
	requests, workers atomic.Int64
	closed            atomic.Bool
}

func (c *churnConn) NewWorker(context.Context) (Worker, error) {
	c.workers.Add(1)
	return churnWorker{c}, nil
}
func (c *churnConn) Close() error { c.closed.Store(true); return nil }

type churnWorker struct{ c *churnConn }

func (w churnWorker) Do(context.Context) error {
	if w.c.closed.Load() {
		return errors.New("request on a closed connection")
	}
	w.c.requests.Add(1)
	time.Sleep(100 * time.Microsecond)
	return nil
}
func (w churnWorker) Close() error { return nil }

// noChurnDriver cannot redial: it is no Churner.
type noChurnDriver struct{}

func (noChurnDriver) Info() DriverInfo {
	return DriverInfo{TargetName: "fake", Methods: []string{"GetUser"}, NoChurn: "it pools its own connections"}
}
func (noChurnDriver) Check(cfg *Config) error { cfg.Method = "GetUser"; return nil }
func (noChurnDriver) Dial(context.Context, *Config, *WireBytes) (Conn, error) {
	return nil, errors.New("not dialled in this test")
}

var (
	churnFake   = &churnDriver{}
	noChurnFake = &noChurnDriver{}
)

func init() {
	Register("churntest", churnFake)
	Register("nochurntest", noChurnFake)
}

// TestChurnEngine: with 2 connections × 3 in flight and 5 requests per connection, the engine
// gives each of the 6 slots a connection of its own, closes every connection after exactly 5
// requests (the last of each slot may carry fewer when the run ends), never sends on a closed
// one, and records the setting.
func TestChurnEngine(t *testing.T) {
	const perConn = 5
	cfg := &Config{Target: Target{Scheme: "churntest", Address: "fake:1", URL: "churntest://fake:1"},
		Connections: 2, Concurrency: 3, Duration: 200 * time.Millisecond, ConnectTimeout: time.Second,
		RequestsPerConnection: perConn, Options: map[string]string{}}
	res, err := Run(context.Background(), cfg, RunOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if res.Errors != 0 || res.Requests == 0 {
		t.Fatalf("requests %d errors %d (%v)", res.Requests, res.Errors, res.ErrorsByCode)
	}
	if res.RequestsPerConnection != perConn {
		t.Errorf("result requests_per_connection %d, want %d", res.RequestsPerConnection, perConn)
	}
	churnFake.mu.Lock()
	defer churnFake.mu.Unlock()
	if got := len(churnFake.conns) - int(churnFake.redials.Load()); got != 6 {
		t.Errorf("%d first connections, want one per slot (6)", got)
	}
	short, total := 0, int64(0)
	for _, c := range churnFake.conns {
		n := c.requests.Load()
		total += n
		if n > perConn || c.workers.Load() != 1 || !c.closed.Load() {
			t.Errorf("a connection carried %d requests on %d workers (closed %v), want at most %d on 1, closed",
				n, c.workers.Load(), c.closed.Load(), perConn)
		}
		if n < perConn {
			short++
		}
	}
	if short > 6 {
		t.Errorf("%d connections carried fewer than %d requests; only each slot's last may", short, perConn)
	}
	if total < res.Requests {
		t.Errorf("connections carried %d requests, the result counts %d", total, res.Requests)
	}
}

func TestChurnRefusedByADriverThatCannot(t *testing.T) {
	cfg := &Config{Target: Target{Scheme: "nochurntest", Address: "fake:1"}, Connections: 1, Concurrency: 1,
		Duration: time.Millisecond, ConnectTimeout: time.Second, RequestsPerConnection: 1}
	_, err := Run(context.Background(), cfg, RunOptions{})
	var ue *UsageError
	if !errors.As(err, &ue) || ue.Error() != "--requests-per-connection: nochurntest:// cannot churn connections: it pools its own connections" {
		t.Fatalf("err %v, want a usage error with the driver's reason", err)
	}
}
