// Package zmqdriver is the load generator's ZeroMQ driver (scheme zmq://host:port, the server's
// ROUTER), on pebbe/zmq4 and the framing of package zmqwire. Four patterns (--zmq-pattern):
//
//   - dealer (default): one DEALER socket per connection keeps concurrency requests in flight,
//     matched to replies by request id. In the closed model the driver speaks ZMTP itself (see
//     lean.go) from event loops; otherwise, through libzmq, the connection is a
//     loadgen.Pipeliner, since a ZeroMQ socket must not be shared between goroutines: one
//     goroutine sends, polls and receives.
//   - req: strict lockstep, one REQ socket per worker (connections × concurrency sockets).
//   - push: one PUSH socket per connection streams raw payloads to the server's PULL sink. There
//     is no reply, so the requests of the result are counted at the sink: the driver reads
//     protobench_server_messages_total{pattern="pipeline"} from the server's /metrics before and
//     after the measured window (a loadgen.ServerCounter). Latency is only the time to hand the
//     message to libzmq.
//   - sub: fan-out. Each connection is a DEALER sending Publish requests plus a SUB socket on the
//     server's PUB endpoint; the copies the subscribers receive are counted as
//     messages_received.
//
// A lost connection is seen through a socket monitor (ZMQ_EVENT_DISCONNECTED), because ZeroMQ
// reconnects silently and requests sent to a dead peer would otherwise wait forever. The server
// drops replies at its high-water mark, so a request unanswered after the request timeout
// (DefaultRequestTimeout unless --request-timeout is set) is a transport:timeout error.
package zmqdriver

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	zmq "github.com/pebbe/zmq4"
	"google.golang.org/protobuf/proto"

	"github.com/protobench/protobench/internal/contract"
	"github.com/protobench/protobench/internal/contract/benchpb"
	"github.com/protobench/protobench/internal/loadgen"
	"github.com/protobench/protobench/internal/wire/zmqwire"
)

func init() { loadgen.Register("zmq", Driver{}) }

// Patterns.
const (
	PatternDealer = "dealer"
	PatternREQ    = "req"
	PatternPush   = "push"
	PatternSub    = "sub"
)

// Option keys in loadgen.Config.Options.
const (
	OptionPullAddr   = "pull_addr"   // PULL sink host:port (default target host:5556)
	OptionPubAddr    = "pub_addr"    // PUB host:port (default target host:5557)
	OptionMetricsURL = "metrics_url" // server /metrics (default http://target host:9100/metrics)
)

// DefaultRequestTimeout bounds the wait for a reply when --request-timeout is not set: the
// server drops replies at its high-water mark, and a lost reply must not hold a slot forever.
const DefaultRequestTimeout = 10 * time.Second

// CodeERR is the code of an ERR reply.
const CodeERR = "zmq:ERR"

// Driver is the ZeroMQ driver.
type Driver struct{}

var (
	patterns   = []string{PatternDealer, PatternREQ, PatternPush, PatternSub}
	reqMethods = []string{contract.MethodGetUser, contract.MethodEcho, contract.MethodMultiply, contract.MethodDivide, zmqwire.MethodPublish}
)

// Info implements loadgen.Driver.
func (Driver) Info() loadgen.DriverInfo {
	return loadgen.DriverInfo{TargetName: "zeromq", Methods: reqMethods, Patterns: patterns,
		NoChurn:    "a ZeroMQ socket opens, reconnects and pools its TCP connections by itself, and has no TLS handshake to measure",
		NoTLS:      "ZeroMQ's own security is CURVE, see docs/tls.md",
		TargetNote: "the ROUTER"}
}

// Check implements loadgen.Driver. It fills the defaults: pattern dealer; method GetUser, except
// Echo for push (the payload is what is pushed) and Publish for sub.
func (Driver) Check(cfg *loadgen.Config) error {
	if cfg.Pattern == "" {
		cfg.Pattern = PatternDealer
	}
	if !slices.Contains(patterns, cfg.Pattern) {
		return fmt.Errorf("--zmq-pattern %q: want one of %s", cfg.Pattern, strings.Join(patterns, ", "))
	}
	switch cfg.Pattern {
	case PatternPush:
		if cfg.Method == "" {
			cfg.Method = contract.MethodEcho
		}
		if cfg.Method != contract.MethodEcho {
			return fmt.Errorf("--method %q: --zmq-pattern push sends raw payloads (--method Echo, sized by --payload-bytes)", cfg.Method)
		}
	case PatternSub:
		if cfg.Method == "" {
			cfg.Method = zmqwire.MethodPublish
		}
		if cfg.Method != zmqwire.MethodPublish {
			return fmt.Errorf("--method %q: --zmq-pattern sub measures fan-out through --method Publish", cfg.Method)
		}
	default:
		if cfg.Method == "" {
			cfg.Method = contract.MethodGetUser
		}
		if !slices.Contains(reqMethods, cfg.Method) {
			return fmt.Errorf("--method %q: the zmq driver calls %v", cfg.Method, reqMethods)
		}
	}
	for _, k := range []string{OptionPullAddr, OptionPubAddr} {
		if v := cfg.Options[k]; v != "" {
			if _, _, err := net.SplitHostPort(v); err != nil {
				return fmt.Errorf("zmq %s %q: want host:port", k, v)
			}
		}
	}
	return nil
}

func host(cfg *loadgen.Config) string {
	h, _, _ := net.SplitHostPort(cfg.Target.Address)
	return h
}

func option(cfg *loadgen.Config, key, defaultPort string) string {
	if v := cfg.Options[key]; v != "" {
		return v
	}
	return net.JoinHostPort(host(cfg), defaultPort)
}

func metricsURL(cfg *loadgen.Config) string {
	if v := cfg.Options[OptionMetricsURL]; v != "" {
		return v
	}
	return "http://" + net.JoinHostPort(host(cfg), "9100") + "/metrics"
}

func requestTimeout(cfg *loadgen.Config) time.Duration {
	if cfg.RequestTimeout > 0 {
		return cfg.RequestTimeout
	}
	return DefaultRequestTimeout
}

// Dial implements loadgen.Driver.
func (d Driver) Dial(ctx context.Context, cfg *loadgen.Config, wire *loadgen.WireBytes) (loadgen.Conn, error) {
	if d.Multiplexes(cfg) {
		if err := loadgen.ProbeTCP(ctx, cfg.Target.Address); err != nil {
			return nil, err
		}
		return dialLeanDealer(ctx, cfg, wire)
	}
	switch cfg.Pattern {
	case PatternREQ:
		if err := loadgen.ProbeTCP(ctx, cfg.Target.Address); err != nil {
			return nil, err
		}
		return &reqConn{cfg: cfg, wire: wire}, nil
	case PatternPush:
		return dialPush(ctx, cfg, wire)
	default:
		return dialDealer(ctx, cfg, wire)
	}
}

// ServerCount implements loadgen.ServerCounter: the PULL sink's message count, read from the
// server's /metrics. It is only meaningful for push; other patterns report 0 and are ignored.
func (Driver) ServerCount(ctx context.Context, cfg *loadgen.Config) (int64, error) {
	if cfg.Pattern != PatternPush {
		return 0, loadgen.ErrNotCounted
	}
	return SinkCount(ctx, metricsURL(cfg))
}

// SinkCount sums protobench_server_messages_total{pattern="pipeline"} at a /metrics URL.
func SinkCount(ctx context.Context, url string) (int64, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return 0, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, fmt.Errorf("reading the sink count: %w", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return 0, fmt.Errorf("reading the sink count: %s answered %s", url, resp.Status)
	}
	var total float64
	found := false
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if !strings.HasPrefix(line, "protobench_server_messages_total{") || !strings.Contains(line, `pattern="pipeline"`) {
			continue
		}
		f := strings.Fields(line[strings.LastIndexByte(line, '}')+1:])
		if len(f) == 0 {
			continue
		}
		v, err := strconv.ParseFloat(f[0], 64)
		if err != nil {
			return 0, fmt.Errorf("reading the sink count: bad value in %q", line)
		}
		total += v
		found = true
	}
	if err := sc.Err(); err != nil {
		return 0, err
	}
	if !found {
		return 0, nil // no message has reached the sink yet
	}
	return int64(total), nil
}

// request is a prebuilt request body and the check of a reply body.
type request struct {
	method []byte
	body   []byte
	check  func(body []byte) error
}

func buildRequest(cfg *loadgen.Config) (request, error) {
	r := request{method: []byte(cfg.Method)}
	var msg proto.Message
	switch cfg.Method {
	case contract.MethodGetUser:
		msg = &benchpb.GetUserRequest{Id: contract.RequestUserID}
		want := contract.UserByID(contract.RequestUserID)
		var u benchpb.User
		r.check = func(b []byte) error {
			if err := proto.Unmarshal(b, &u); err != nil || u.Id != want.ID || u.Name != want.Name {
				return fmt.Errorf("GetUser(%d) reply %q", contract.RequestUserID, b)
			}
			return nil
		}
	case contract.MethodEcho, zmqwire.MethodPublish:
		n := cfg.PayloadBytes
		msg = &benchpb.EchoRequest{Payload: contract.Payload(n)}
		var e benchpb.EchoResponse
		publish := cfg.Method == zmqwire.MethodPublish
		r.check = func(b []byte) error {
			if publish {
				return nil // Publish replies with an empty body
			}
			if err := proto.Unmarshal(b, &e); err != nil || len(e.Payload) != n {
				return fmt.Errorf("Echo reply of %d bytes for %d sent", len(b), n)
			}
			return nil
		}
	case contract.MethodMultiply:
		msg = &benchpb.ArithRequest{A: contract.RequestA, B: contract.RequestB}
		var m benchpb.MultiplyResponse
		r.check = func(b []byte) error {
			if err := proto.Unmarshal(b, &m); err != nil || m.Product != contract.Multiply(contract.RequestA, contract.RequestB) {
				return fmt.Errorf("Multiply reply %q", b)
			}
			return nil
		}
	case contract.MethodDivide:
		msg = &benchpb.ArithRequest{A: contract.RequestA, B: contract.RequestB}
		q, rem, _ := contract.Divide(contract.RequestA, contract.RequestB)
		var d benchpb.DivideResponse
		r.check = func(b []byte) error {
			if err := proto.Unmarshal(b, &d); err != nil || d.Quotient != q || d.Remainder != rem {
				return fmt.Errorf("Divide reply %q", b)
			}
			return nil
		}
	default:
		return r, fmt.Errorf("zmq driver: no method %q", cfg.Method)
	}
	b, err := proto.Marshal(msg)
	r.body = b
	return r, err
}

// replyError turns a decoded reply into the request's outcome.
func (r *request) replyError(rep zmqwire.Reply) error {
	if err := rep.Err(); err != nil {
		return loadgen.ProtocolError(CodeERR, err)
	}
	if err := r.check(rep.Body); err != nil {
		return loadgen.ProtocolError(loadgen.CodeBadResponse, err)
	}
	return nil
}

// send writes frames as one message.
func send(s *zmq.Socket, frames ...[]byte) (int, error) {
	n := 0
	for i, f := range frames {
		flag := zmq.Flag(0)
		if i < len(frames)-1 {
			flag = zmq.SNDMORE
		}
		if _, err := s.SendBytes(f, flag); err != nil {
			return n, err
		}
		n += len(f)
	}
	return n, nil
}

func isErrno(err error, e syscall.Errno) bool { return zmq.AsErrno(err) == zmq.Errno(e) }

var monitorSeq atomic.Int64

// monitored is a socket with a monitor that reports its connection's fate.
type monitored struct {
	sock *zmq.Socket
	mon  *zmq.Socket
}

// newMonitored creates a socket of type typ, attaches a monitor and connects to endpoint.
func newMonitored(typ zmq.Type, endpoint string) (*monitored, error) {
	s, err := zmq.NewSocket(typ)
	if err != nil {
		return nil, err
	}
	_ = s.SetLinger(0)
	addr := fmt.Sprintf("inproc://protobench-monitor-%d", monitorSeq.Add(1))
	if err := s.Monitor(addr, zmq.EVENT_CONNECTED|zmq.EVENT_DISCONNECTED); err != nil {
		s.Close()
		return nil, err
	}
	mon, err := zmq.NewSocket(zmq.PAIR)
	if err != nil {
		s.Close()
		return nil, err
	}
	_ = mon.SetLinger(0)
	if err := mon.Connect(addr); err != nil {
		s.Close()
		mon.Close()
		return nil, err
	}
	if err := s.Connect("tcp://" + endpoint); err != nil {
		s.Close()
		mon.Close()
		return nil, err
	}
	return &monitored{sock: s, mon: mon}, nil
}

// waitConnected waits for the monitor's CONNECTED event, so that the run starts on a live
// connection and an unreachable endpoint fails within the connect timeout.
func (m *monitored) waitConnected(ctx context.Context, endpoint string) error {
	poller := zmq.NewPoller()
	poller.Add(m.mon, zmq.POLLIN)
	for {
		if ctx.Err() != nil {
			return &loadgen.DialError{Address: endpoint, Err: fmt.Errorf("ZeroMQ connection not established: %w", ctx.Err())}
		}
		polled, err := poller.Poll(20 * time.Millisecond)
		if err != nil && !isErrno(err, syscall.EINTR) {
			return &loadgen.DialError{Address: endpoint, Err: err}
		}
		if len(polled) == 0 {
			continue
		}
		ev, _, _, err := m.mon.RecvEvent(0)
		if err == nil && ev == zmq.EVENT_CONNECTED {
			return nil
		}
	}
}

// disconnected drains the monitor and reports whether the connection went down.
func (m *monitored) disconnected() bool {
	down := false
	for {
		ev, _, _, err := m.mon.RecvEvent(zmq.DONTWAIT)
		if err != nil {
			return down
		}
		switch ev {
		case zmq.EVENT_DISCONNECTED:
			down = true
		case zmq.EVENT_CONNECTED:
			down = false
		}
	}
}

func (m *monitored) close() {
	_ = m.sock.Close()
	_ = m.mon.Close()
}

// errDisconnected is what requests in flight on a connection that went down fail with.
var errDisconnected = loadgen.ConnLost(&loadgen.CodedError{Code: loadgen.CodeConnReset, Err: fmt.Errorf("ZeroMQ peer disconnected")})

func timeoutError(d time.Duration) error {
	return &loadgen.CodedError{Code: loadgen.CodeTimeout, Err: fmt.Errorf("no reply within %s", d)}
}
