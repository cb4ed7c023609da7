package servertest_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/rpc"
	"strconv"
	"strings"
	"testing"
	"time"

	zmq "github.com/pebbe/zmq4"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	_ "google.golang.org/grpc/encoding/gzip" // python-grpc with PROTOBENCH_COMPRESSION=gzip answers gzip
	"google.golang.org/protobuf/proto"

	"github.com/protobench/protobench/internal/contract"
	"github.com/protobench/protobench/internal/contract/benchpb"
	"github.com/protobench/protobench/internal/server/netrpcserver"
	"github.com/protobench/protobench/internal/server/restserver"
	"github.com/protobench/protobench/internal/wire/zmqwire"
)

// client is the contract as a test calls it, whatever the protocol.
type client interface {
	Echo(ctx context.Context, payload []byte) ([]byte, error)
	GetUser(ctx context.Context, id int64) (contract.User, error)
	Multiply(ctx context.Context, a, b int64) (int64, error)
	Divide(ctx context.Context, a, b int64) (q, r int64, err error)
	Close() error
}

// bigMessages lets test clients send and receive the 10 MB payloads and the oversized ones.
const bigMessages = 64 << 20

// ---- gRPC (Go and Python servers) ----

type grpcClient struct {
	conn *grpc.ClientConn
	c    benchpb.BenchClient
}

func dialGRPC(t testing.TB, addr string) *grpcClient {
	t.Helper()
	conn, err := grpc.NewClient(addr, grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithDefaultCallOptions(grpc.MaxCallRecvMsgSize(bigMessages), grpc.MaxCallSendMsgSize(bigMessages)))
	if err != nil {
		t.Fatal(err)
	}
	return &grpcClient{conn: conn, c: benchpb.NewBenchClient(conn)}
}

func (g *grpcClient) Echo(ctx context.Context, p []byte) ([]byte, error) {
	r, err := g.c.Echo(ctx, &benchpb.EchoRequest{Payload: p})
	return r.GetPayload(), err
}

func (g *grpcClient) GetUser(ctx context.Context, id int64) (contract.User, error) {
	u, err := g.c.GetUser(ctx, &benchpb.GetUserRequest{Id: id})
	if err != nil {
		return contract.User{}, err
	}
	return contract.User{ID: u.Id, Name: u.Name, Email: u.Email, Age: u.Age}, nil
}

func (g *grpcClient) Multiply(ctx context.Context, a, b int64) (int64, error) {
	r, err := g.c.Multiply(ctx, &benchpb.ArithRequest{A: a, B: b})
	return r.GetProduct(), err
}

func (g *grpcClient) Divide(ctx context.Context, a, b int64) (int64, int64, error) {
	r, err := g.c.Divide(ctx, &benchpb.ArithRequest{A: a, B: b})
	return r.GetQuotient(), r.GetRemainder(), err
}

func (g *grpcClient) Close() error { return g.conn.Close() }

// ---- REST ----

type restClient struct {
	base string
	hc   *http.Client
}

// httpError is a non-2xx answer with its decoded JSON error body.
type httpError struct {
	Status      int
	ContentType string
	Message     string // the "error" field; empty if the body was not the JSON error shape
	Body        string
}

func (e *httpError) Error() string { return fmt.Sprintf("HTTP %d: %s", e.Status, e.Body) }

func dialREST(_ testing.TB, addr string) *restClient {
	return &restClient{base: "http://" + addr, hc: &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 4}}}
}

func (c *restClient) do(ctx context.Context, method, path, ctype string, body io.Reader) ([]byte, error) {
	req, err := http.NewRequestWithContext(ctx, method, c.base+path, body)
	if err != nil {
		return nil, err
	}
	if ctype != "" {
		req.Header.Set("Content-Type", ctype)
	}
	resp, err := c.hc.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode != http.StatusOK {
		he := &httpError{Status: resp.StatusCode, ContentType: resp.Header.Get("Content-Type"), Body: string(b)}
		var e restserver.ErrorResponse
		if json.Unmarshal(b, &e) == nil {
			he.Message = e.Error
		}
		return nil, he
	}
	return b, nil
}

func (c *restClient) Echo(ctx context.Context, p []byte) ([]byte, error) {
	return c.do(ctx, http.MethodPost, restserver.PathEcho, "application/octet-stream", bytes.NewReader(p))
}

func (c *restClient) GetUser(ctx context.Context, id int64) (contract.User, error) {
	var u contract.User
	b, err := c.do(ctx, http.MethodGet, restserver.PathUsers+strconv.FormatInt(id, 10), "", nil)
	if err == nil {
		err = json.Unmarshal(b, &u)
	}
	return u, err
}

func (c *restClient) arith(ctx context.Context, path string, a, b int64, out any) error {
	body, _ := json.Marshal(map[string]int64{"a": a, "b": b})
	resp, err := c.do(ctx, http.MethodPost, path, "application/json", bytes.NewReader(body))
	if err != nil {
		return err
	}
	return json.Unmarshal(resp, out)
}

func (c *restClient) Multiply(ctx context.Context, a, b int64) (int64, error) {
	var r restserver.MultiplyResponse
	err := c.arith(ctx, restserver.PathMultiply, a, b, &r)
	return r.Product, err
}

func (c *restClient) Divide(ctx context.Context, a, b int64) (int64, int64, error) {
	var r restserver.DivideResponse
	err := c.arith(ctx, restserver.PathDivide, a, b, &r)
	return r.Quotient, r.Remainder, err
}

func (c *restClient) Close() error { c.hc.CloseIdleConnections(); return nil }

// ---- net/rpc ----

type netrpcClient struct{ c *rpc.Client }

func dialNetRPC(t testing.TB, addr string) *netrpcClient {
	t.Helper()
	c, err := rpc.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	return &netrpcClient{c: c}
}

// call is Call with the context's deadline, so a broken server fails the test instead of hanging.
func (n *netrpcClient) call(ctx context.Context, method string, args, reply any) error {
	call := n.c.Go(method, args, reply, make(chan *rpc.Call, 1))
	select {
	case <-call.Done:
		return call.Error
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (n *netrpcClient) Echo(ctx context.Context, p []byte) ([]byte, error) {
	var r netrpcserver.EchoReply
	err := n.call(ctx, "Bench.Echo", &netrpcserver.EchoArgs{Payload: p}, &r)
	return r.Payload, err
}

func (n *netrpcClient) GetUser(ctx context.Context, id int64) (contract.User, error) {
	var u contract.User
	err := n.call(ctx, "Bench.GetUser", &netrpcserver.GetUserArgs{ID: id}, &u)
	return u, err
}

// Multiply and Divide use seed 004's Arith service and types, as the article's client does.
func (n *netrpcClient) Multiply(ctx context.Context, a, b int64) (int64, error) {
	var r int
	err := n.call(ctx, "Arith.Multiply", &netrpcserver.Args{A: int(a), B: int(b)}, &r)
	return int64(r), err
}

func (n *netrpcClient) Divide(ctx context.Context, a, b int64) (int64, int64, error) {
	var q netrpcserver.Quotient
	err := n.call(ctx, "Arith.Divide", &netrpcserver.Args{A: int(a), B: int(b)}, &q)
	return int64(q.Quo), int64(q.Rem), err
}

func (n *netrpcClient) Close() error { return n.c.Close() }

// ---- ZeroMQ ----

// zmqClient is a DEALER client. A zmq socket is not goroutine-safe; the tests use each client
// from one goroutine only.
type zmqClient struct {
	ctx  *zmq.Context
	sock *zmq.Socket
	next uint64
}

func dialZMQ(t testing.TB, addr string, typ zmq.Type) *zmqClient {
	t.Helper()
	ctx, err := zmq.NewContext()
	if err != nil {
		t.Fatal(err)
	}
	sock, err := ctx.NewSocket(typ)
	if err != nil {
		t.Fatal(err)
	}
	sock.SetLinger(0)
	sock.SetRcvtimeo(30 * time.Second)
	if err := sock.Connect("tcp://" + addr); err != nil {
		t.Fatal(err)
	}
	return &zmqClient{ctx: ctx, sock: sock}
}

// raw sends frames and returns the reply frames.
func (z *zmqClient) raw(frames [][]byte) ([][]byte, error) {
	for i, f := range frames {
		flag := zmq.Flag(0)
		if i < len(frames)-1 {
			flag = zmq.SNDMORE
		}
		if _, err := z.sock.SendBytes(f, flag); err != nil {
			return nil, err
		}
	}
	return z.sock.RecvMessageBytes(0)
}

// request sends method+body and decodes an OK reply body into out (nil to skip).
func (z *zmqClient) request(method string, in proto.Message, out proto.Message) error {
	body, err := proto.Marshal(in)
	if err != nil {
		return err
	}
	z.next++
	frames, err := z.raw(zmqwire.EncodeRequest(method, z.next, body))
	if err != nil {
		return err
	}
	rep, err := zmqwire.DecodeReply(frames)
	if err != nil {
		return err
	}
	if rep.ID != z.next {
		return fmt.Errorf("reply id %d, want %d", rep.ID, z.next)
	}
	if err := rep.Err(); err != nil {
		return err
	}
	if out == nil {
		return nil
	}
	return proto.Unmarshal(rep.Body, out)
}

func (z *zmqClient) Echo(_ context.Context, p []byte) ([]byte, error) {
	var r benchpb.EchoResponse
	err := z.request(contract.MethodEcho, &benchpb.EchoRequest{Payload: p}, &r)
	return r.Payload, err
}

func (z *zmqClient) GetUser(_ context.Context, id int64) (contract.User, error) {
	var u benchpb.User
	err := z.request(contract.MethodGetUser, &benchpb.GetUserRequest{Id: id}, &u)
	return contract.User{ID: u.Id, Name: u.Name, Email: u.Email, Age: u.Age}, err
}

func (z *zmqClient) Multiply(_ context.Context, a, b int64) (int64, error) {
	var r benchpb.MultiplyResponse
	err := z.request(contract.MethodMultiply, &benchpb.ArithRequest{A: a, B: b}, &r)
	return r.Product, err
}

func (z *zmqClient) Divide(_ context.Context, a, b int64) (int64, int64, error) {
	var r benchpb.DivideResponse
	err := z.request(contract.MethodDivide, &benchpb.ArithRequest{A: a, B: b}, &r)
	return r.Quotient, r.Remainder, err
}

func (z *zmqClient) Close() error {
	z.sock.Close()
	return z.ctx.Term()
}

// ---- metrics ----

// sample is one exposition line: name, labels, value.
type sample struct {
	name   string
	labels map[string]string
	value  float64
}

// scrape reads /metrics in the text format. It parses only what our servers emit (no escapes in
// label values), which is enough to check counters and stays independent of client_golang.
func scrape(t testing.TB, metricsAddr string) []sample {
	t.Helper()
	resp, err := http.Get("http://" + metricsAddr + "/metrics")
	if err != nil {
		t.Fatalf("scrape: %v", err)
	}
	defer resp.Body.Close()
	var out []sample
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if line == "" || line[0] == '#' {
			continue
		}
		s := sample{labels: map[string]string{}}
		rest := line
		if i := strings.IndexByte(line, '{'); i >= 0 {
			s.name = line[:i]
			j := strings.LastIndexByte(line, '}')
			for _, kv := range strings.Split(line[i+1:j], ",") {
				if k, v, ok := strings.Cut(kv, "="); ok {
					s.labels[strings.TrimSpace(k)] = strings.Trim(v, `"`)
				}
			}
			rest = strings.TrimSpace(line[j+1:])
		} else {
			s.name, rest, _ = strings.Cut(line, " ")
		}
		f := strings.Fields(rest)
		if len(f) == 0 {
			continue
		}
		v, err := strconv.ParseFloat(f[0], 64)
		if err != nil {
			continue
		}
		s.value = v
		out = append(out, s)
	}
	return out
}

// value sums the samples named name whose labels include want.
func value(samples []sample, name string, want map[string]string) float64 {
	var sum float64
next:
	for _, s := range samples {
		if s.name != name {
			continue
		}
		for k, v := range want {
			if s.labels[k] != v {
				continue next
			}
		}
		sum += s.value
	}
	return sum
}

// waitFor polls cond until it holds; metrics are updated just after a reply is sent, so a client
// can see the reply a moment before the counter moves.
func waitFor(t testing.TB, what string, cond func() (bool, string)) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		ok, state := cond()
		if ok {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: still not true after 20s: %s", what, state)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// sendRaw writes b on a fresh TCP connection, reads whatever comes back until the server closes
// or a short while passes, and closes: garbage and truncated frames from a broken client.
func sendRaw(t testing.TB, addr string, b []byte) {
	t.Helper()
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatalf("dial %s: %v", addr, err)
	}
	defer conn.Close()
	conn.Write(b)
	if tc, ok := conn.(*net.TCPConn); ok {
		tc.CloseWrite()
	}
	conn.SetReadDeadline(time.Now().Add(500 * time.Millisecond))
	io.Copy(io.Discard, conn)
}

var errNotProtocolError = errors.New("not the protocol's error")
