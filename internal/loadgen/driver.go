package loadgen

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"sort"
	"sync"
	"sync/atomic"
	"time"
)

// Driver speaks one protocol. Each driver package registers itself under its URL scheme in an
// init function, so adding a protocol adds a package and changes no switch.
type Driver interface {
	// Info describes the driver for help texts and defaults.
	Info() DriverInfo
	// Check reports a usage error for a configuration the driver cannot run (unknown method or
	// pattern), before anything is dialled. It fills the driver's defaults for an empty Method
	// or Pattern, and must be idempotent.
	Check(cfg *Config) error
	// Dial opens one connection. ctx carries the connect timeout; a failure should be a
	// *DialError naming the address. Drivers add the bytes they move to wire.
	Dial(ctx context.Context, cfg *Config, wire *WireBytes) (Conn, error)
}

// DriverInfo describes a driver.
type DriverInfo struct {
	// TargetName is the server name recorded when --target-name is not given (rest for http).
	TargetName string
	// Methods are the methods the driver can call; the first is the default.
	Methods []string
	// Patterns are the protocol variants (ZeroMQ socket patterns); empty when there are none.
	Patterns []string
	// NoChurn says why a driver that is not a Churner cannot churn connections.
	NoChurn string
	// Gzip: under --compression gzip the driver compresses its requests and accepts compressed
	// replies. Drivers without it refuse gzip.
	Gzip bool
	// NoTLS says why the driver cannot speak TLS; empty: --tls-ca applies to it.
	NoTLS string
	// TargetNote says what --target's address must be, where the scheme alone does not (the
	// ZeroMQ ROUTER).
	TargetNote string
}

// Conn is one connection to the target. A connection serves Config.Concurrency slots, either as
// that many Workers (NewWorker, one goroutine each) or, if it implements Pipeliner, by itself.
type Conn interface {
	// NewWorker returns a worker for one slot of this connection. The engine also calls it to
	// replace a worker whose connection was lost; ctx then carries the connect timeout.
	NewWorker(ctx context.Context) (Worker, error)
	Close() error
}

// Worker sends one request at a time and is used by a single goroutine.
type Worker interface {
	// Do sends one request and waits for its reply. A failed request returns an error that
	// Classify can name (CodedError or a transport error); ConnLost marks a dead connection.
	Do(ctx context.Context) error
	Close() error
}

// Pipeliner is a connection that keeps Config.Concurrency requests in flight from one goroutine,
// for sockets that must not be shared between goroutines (ZeroMQ). The engine calls Pipeline
// instead of NewWorker; it returns when Pipe.Claim says the schedule is over and every request
// has been answered, when ctx is done, or with an error when the connection is lost.
type Pipeliner interface {
	Pipeline(ctx context.Context, p *Pipe) error
}

// Multiplexer is implemented by a driver whose connections are best served together from a few
// event loops, as wrk does, rather than from a goroutine per slot: HTTP/1.1 carries one request
// at a time per TCP connection, so a goroutine per connection pays the Go scheduler and network
// poller on every request. When Multiplexes says so the engine splits the connections into
// GOMAXPROCS groups and calls Serve once per group, each on a goroutine of its own, in both
// models: in the open model the loops time every send themselves (netloop/open.go).
type Multiplexer interface {
	// Multiplexes reports whether Serve runs this configuration (Dial then returns connections
	// for Serve, not for NewWorker).
	Multiplexes(cfg *Config) bool
	// Serve keeps every slot of conns busy until Pipe.Claim says the schedule is over and every
	// request has been answered, or ctx is done. It replaces lost connections itself and returns
	// an error only when that fails.
	Serve(ctx context.Context, conns []Conn, p *Pipe) error
}

// Config is a validated run configuration.
type Config struct {
	Target     Target
	TargetName string
	Method     string
	// Mix, when set, spreads the connections over several methods by weight (--method
	// Echo:50,GetUser:50); Method then holds the mix's canonical string, and each connection is
	// dialled with a copy of the configuration naming its one method.
	Mix         []MethodWeight
	Pattern     string // protocol variant (ZeroMQ: dealer, req, push, sub)
	Connections int
	Concurrency int // slots per connection: in-flight requests in the closed model
	// Pacer is the open model's measured schedule; nil means the closed model.
	Pacer          Pacer
	Duration       time.Duration // measured window (the pacer's length in the open model)
	Warmup         time.Duration
	PayloadBytes   int
	MaxInflight    int // open model: workers in total (0 = Connections × Concurrency)
	ConnectTimeout time.Duration
	RequestTimeout time.Duration // 0 = none; the run's end still bounds every request
	Labels         map[string]string
	// Options are driver-specific settings (e.g. "metrics_url" for the ZeroMQ sink count).
	Options map[string]string
	// TLS, when set, makes every connection TLS (--tls-ca). The lean event-loop clients work on
	// raw sockets and carry TLS records through crypto/tls over an in-memory connection
	// (netloop/tls.go); the library paths use crypto/tls directly.
	TLS *tls.Config
	// RequestsPerConnection, when positive, closes each connection after that many requests and
	// opens a new one (connection churn, churn.go); 0 reuses connections for the whole run.
	RequestsPerConnection int
	// Compression is CompressionNone (advertise no compressor, send nothing compressed) or
	// CompressionGzip (gzip requests, accept gzip replies): the step's, never a library's
	// default.
	Compression string
}

// Open reports whether the run uses the open model.
func (c *Config) Open() bool { return c.Pacer != nil }

// Target is a parsed --target URL.
type Target struct {
	URL     string // as given
	Scheme  string // grpc, http, netrpc, zmq
	Address string // host:port
}

// WireBytes counts bytes moved by a connection. The engine reads the counters at the start and
// end of the measured window, so warm-up traffic is excluded without any per-request bookkeeping.
type WireBytes struct {
	Sent     atomic.Int64
	Received atomic.Int64
	// Messages counts messages received outside request/reply, such as the copies a ZeroMQ SUB
	// socket receives from the server's fan-out.
	Messages atomic.Int64
	// CompressedReplies counts replies that arrived compressed: the client's side of what the
	// server's encoding counter says.
	CompressedReplies atomic.Int64
}

// ServerCounter is implemented by drivers whose throughput is counted by the server, like ZeroMQ
// PUSH, which gets no reply: the engine reads the count when the measured window starts and once
// it has settled after the end, and reports the difference as the run's requests.
type ServerCounter interface {
	// ServerCount returns the server's count so far, or ErrNotCounted when this configuration's
	// requests are counted by the client as usual.
	ServerCount(ctx context.Context, cfg *Config) (int64, error)
}

// ErrNotCounted is what a ServerCounter returns for a configuration it does not count.
var ErrNotCounted = errors.New("not counted by the server")

// CountingConn wraps c so that every read and write is added to w.
func CountingConn(c net.Conn, w *WireBytes) net.Conn { return &countingConn{Conn: c, w: w} }

type countingConn struct {
	net.Conn
	w *WireBytes
}

func (c *countingConn) Read(p []byte) (int, error) {
	n, err := c.Conn.Read(p)
	c.w.Received.Add(int64(n))
	return n, err
}

func (c *countingConn) Write(p []byte) (int, error) {
	n, err := c.Conn.Write(p)
	c.w.Sent.Add(int64(n))
	return n, err
}

// DialTCP dials address within ctx and wraps the failure in a DialError naming the address.
func DialTCP(ctx context.Context, address string) (net.Conn, error) {
	var d net.Dialer
	c, err := d.DialContext(ctx, "tcp", address)
	if err != nil {
		return nil, &DialError{Address: address, Err: unwrapOpError(err)}
	}
	return c, nil
}

// ProbeTCP checks that something accepts TCP connections at address, for drivers whose library
// connects lazily (gRPC, ZeroMQ) and would otherwise report an unreachable target late or never.
func ProbeTCP(ctx context.Context, address string) error {
	c, err := DialTCP(ctx, address)
	if err != nil {
		return err
	}
	return c.Close()
}

// unwrapOpError drops net.OpError's "dial tcp 1.2.3.4:5:" prefix, which DialError already says.
func unwrapOpError(err error) error {
	if oe, ok := err.(*net.OpError); ok && oe.Err != nil {
		return oe.Err
	}
	return err
}

var (
	registryMu sync.RWMutex
	registry   = map[string]Driver{}
)

// Register makes a driver available under a URL scheme. It panics on a duplicate, which is a
// programming error found at start-up.
func Register(scheme string, d Driver) {
	registryMu.Lock()
	defer registryMu.Unlock()
	if _, dup := registry[scheme]; dup {
		panic(fmt.Sprintf("loadgen: driver %q registered twice", scheme))
	}
	registry[scheme] = d
}

// Lookup returns the driver registered for scheme.
func Lookup(scheme string) (Driver, bool) {
	registryMu.RLock()
	defer registryMu.RUnlock()
	d, ok := registry[scheme]
	return d, ok
}

// Schemes lists the registered schemes in order.
func Schemes() []string {
	registryMu.RLock()
	defer registryMu.RUnlock()
	out := make([]string, 0, len(registry))
	for s := range registry {
		out = append(out, s)
	}
	sort.Strings(out)
	return out
}
