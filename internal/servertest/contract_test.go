package servertest_test

import (
	"bytes"
	"context"
	"encoding/gob"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/rpc"
	"os"
	"strings"
	"testing"
	"time"

	zmq "github.com/pebbe/zmq4"
	"google.golang.org/grpc/codes"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/status"

	"github.com/protobench/protobench/internal/contract"
	"github.com/protobench/protobench/internal/contract/benchpb"
	"github.com/protobench/protobench/internal/server/netrpcserver"
	"github.com/protobench/protobench/internal/servertest"
	"github.com/protobench/protobench/internal/wire/zmqwire"
)

// maxPayload is the limit every server in the suite runs with: seed 001's 10 MB payload fits, one
// byte more than the limit is the oversized case.
const (
	maxPayload = 10_500_000
	bigPayload = 10_000_000
)

// serverCase is one row of the contract suite: how to start a server, talk to it, and recognise
// its protocol's errors. A new protocol is one more row.
type serverCase struct {
	name     string // row name
	server   string // servertest name
	protocol string // metrics protocol label
	options  []servertest.Option
	okCode   string // the metrics code label of a success
	dial     func(t testing.TB, ep servertest.Endpoints) client
	// isOversize and isDivideByZero return nil when err is the protocol's error for the case.
	isOversize     func(err error) error
	isDivideByZero func(err error) error
	// unknownMethod makes a call the server does not know and returns nil if it answered with a
	// protocol error.
	unknownMethod func(t testing.TB, ep servertest.Endpoints) error
	// truncated are byte strings a broken client might leave on the main port before closing.
	truncated map[string][]byte
	// extra are protocol-specific checks (streams, pipelines, REST error bodies).
	extra map[string]func(t *testing.T, ep servertest.Endpoints)
}

func grpcStatus(want codes.Code) func(error) error {
	return func(err error) error {
		if got := status.Code(err); got != want {
			return fmt.Errorf("gRPC status %v (%v), want %v", got, err, want)
		}
		return nil
	}
}

func httpStatus(want int) func(error) error {
	return func(err error) error {
		var he *httpError
		if !errors.As(err, &he) {
			return fmt.Errorf("%v: %w", err, errNotProtocolError)
		}
		if he.Status != want || he.ContentType != "application/json" || he.Message == "" {
			return fmt.Errorf("HTTP %d %s body %q, want %d with a JSON {\"error\"} body", he.Status, he.ContentType, he.Body, want)
		}
		return nil
	}
}

func netrpcError(substr string) func(error) error {
	return func(err error) error {
		var se rpc.ServerError
		if !errors.As(err, &se) || !strings.Contains(string(se), substr) {
			return fmt.Errorf("%v (%T), want an rpc.ServerError containing %q", err, err, substr)
		}
		return nil
	}
}

func zmqError(substr string) func(error) error {
	return func(err error) error {
		var re *zmqwire.RemoteError
		if !errors.As(err, &re) || !strings.Contains(re.Message, substr) {
			return fmt.Errorf("%v, want an ERR reply containing %q", err, substr)
		}
		return nil
	}
}

// http2Truncated is the HTTP/2 client preface followed by a SETTINGS frame header announcing
// 18 bytes of which only 3 arrive.
var http2Truncated = append([]byte("PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"), 0, 0, 18, 4, 0, 0, 0, 0, 0, 0, 0, 3)

func grpcTruncated() map[string][]byte {
	return map[string][]byte{
		"half a preface":          []byte("PRI * HTTP/2.0\r\n"),
		"preface then half frame": http2Truncated,
		"HTTP/1.1 on an h2 port":  []byte("GET / HTTP/1.1\r\nHost: x\r\n\r\n"),
	}
}

// gobTruncated is a net/rpc request for Bench.Echo with its gob stream cut in the middle.
func gobTruncated() []byte {
	var buf bytes.Buffer
	enc := gob.NewEncoder(&buf)
	enc.Encode(&rpc.Request{ServiceMethod: "Bench.Echo", Seq: 1})
	enc.Encode(&netrpcserver.EchoArgs{Payload: contract.Payload(1000)})
	b := buf.Bytes()
	return b[:len(b)/2]
}

func grpcRow(name, server, protocol string, opts ...servertest.Option) serverCase {
	return serverCase{
		name: name, server: server, protocol: protocol, okCode: "OK",
		options:        append([]servertest.Option{servertest.WithMaxPayloadBytes(maxPayload)}, opts...),
		dial:           func(t testing.TB, ep servertest.Endpoints) client { return dialGRPC(t, ep.Main) },
		isOversize:     grpcStatus(codes.ResourceExhausted),
		isDivideByZero: grpcStatus(codes.InvalidArgument),
		unknownMethod: func(t testing.TB, ep servertest.Endpoints) error {
			c := dialGRPC(t, ep.Main)
			defer c.Close()
			err := c.conn.Invoke(context.Background(), "/protobench.v1.Bench/Nope", &benchpb.EchoRequest{}, &benchpb.EchoResponse{})
			return grpcStatus(codes.Unimplemented)(err)
		},
		truncated: grpcTruncated(),
		extra: map[string]func(*testing.T, servertest.Endpoints){
			"EchoStream": func(t *testing.T, ep servertest.Endpoints) { checkEchoStream(t, ep, protocol) },
		},
	}
}

func suite() []serverCase {
	goGRPC := grpcRow("grpc", servertest.GRPC, "grpc")
	goGRPC.extra["health service"] = checkGRPCHealth
	return append([]serverCase{
		goGRPC,
		{
			name: "rest", server: servertest.REST, protocol: "rest", okCode: "200",
			options:        []servertest.Option{servertest.WithMaxPayloadBytes(maxPayload)},
			dial:           func(t testing.TB, ep servertest.Endpoints) client { return dialREST(t, ep.Main) },
			isOversize:     httpStatus(http.StatusRequestEntityTooLarge),
			isDivideByZero: httpStatus(http.StatusBadRequest),
			unknownMethod: func(t testing.TB, ep servertest.Endpoints) error {
				_, err := dialREST(t, ep.Main).do(context.Background(), http.MethodGet, "/v1/nope", "", nil)
				return httpStatus(http.StatusNotFound)(err)
			},
			truncated: map[string][]byte{
				"half a request line": []byte("GET /v1/us"),
				"body cut short":      []byte("POST /v1/echo HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\nabc"),
				"binary garbage line": {0x16, 0x03, 0x01, 0x00, 0xff, 0x01, '\r', '\n', '\r', '\n'},
			},
			extra: map[string]func(*testing.T, servertest.Endpoints){"error answers": checkRESTErrors},
		},
		{
			name: "netrpc", server: servertest.NetRPC, protocol: "netrpc", okCode: "OK",
			options:        []servertest.Option{servertest.WithMaxPayloadBytes(maxPayload)},
			dial:           func(t testing.TB, ep servertest.Endpoints) client { return dialNetRPC(t, ep.Main) },
			isOversize:     netrpcError("exceeds the limit"),
			isDivideByZero: netrpcError(contract.ErrDivideByZero.Error()),
			unknownMethod: func(t testing.TB, ep servertest.Endpoints) error {
				c := dialNetRPC(t, ep.Main)
				defer c.Close()
				var r int
				return netrpcError("can't find method")(c.call(context.Background(), "Bench.Nope", &netrpcserver.Args{}, &r))
			},
			truncated: map[string][]byte{"gob request cut in half": gobTruncated()},
			extra: map[string]func(*testing.T, servertest.Endpoints){
				"many outstanding calls on one connection": checkNetRPCPipelining,
			},
		},
		{
			name: "zeromq", server: servertest.ZeroMQ, protocol: "zeromq", okCode: "OK",
			options:        []servertest.Option{servertest.WithMaxPayloadBytes(maxPayload)},
			dial:           func(t testing.TB, ep servertest.Endpoints) client { return dialZMQ(t, ep.Main, zmq.DEALER) },
			isOversize:     zmqError("exceeds the limit"),
			isDivideByZero: zmqError(contract.ErrDivideByZero.Error()),
			unknownMethod: func(t testing.TB, ep servertest.Endpoints) error {
				c := dialZMQ(t, ep.Main, zmq.DEALER)
				defer c.Close()
				return zmqError("unknown method")(c.request("Nope", &benchpb.EchoRequest{}, nil))
			},
			truncated: map[string][]byte{
				// A ZMTP 3 greeting is 64 bytes; this is its first 12.
				"greeting cut short": {0xff, 0, 0, 0, 0, 0, 0, 0, 1, 0x7f, 3, 0},
			},
			extra: map[string]func(*testing.T, servertest.Endpoints){
				"bad framing gets ERR": checkZMQBadFraming,
				"REQ client":           checkZMQREQ,
				"pipeline sink counts": checkZMQPipeline,
				"publish fans out":     checkZMQPublish,
			},
		},
		grpcRow("python-grpc", servertest.PythonGRPC, "python-grpc"),
		// The aio server with gzip responses: the same contract through seed 001's other knobs.
		grpcRow("python-grpc-aio-gzip", servertest.PythonGRPC, "python-grpc",
			servertest.WithKnob("PROTOBENCH_PY_MODE", "aio"), servertest.WithKnob("PROTOBENCH_COMPRESSION", "gzip")),
	}, connectRows()...)
}

// garbage is bytes no protocol here accepts: not TLS, not HTTP, not ZMTP, not gob.
var garbage = bytes.Repeat([]byte{0x00, 0xff, 0x13, 0x37, '\r', '\n', 0x80, 0x7f}, 512)

// externalEnv names an already running server to run one row against instead of starting it,
// e.g. a container: PROTOBENCH_CONTRACT_EXTERNAL=python-grpc@172.17.0.2:50051@172.17.0.2:9100
// (row@main@metrics; for zeromq add @pull@pub). The server must run with
// --max-payload-bytes=10500000, the suite's limit.
const externalEnv = "PROTOBENCH_CONTRACT_EXTERNAL"

func TestContract(t *testing.T) {
	external := strings.Split(os.Getenv(externalEnv), "@")
	for _, sc := range suite() {
		t.Run(sc.name, func(t *testing.T) {
			var ep servertest.Endpoints
			switch {
			case external[0] == "":
				t.Parallel()
				ep = servertest.Start(t, sc.server, sc.options...)
			case external[0] == sc.name && len(external) >= 3:
				ep = servertest.Endpoints{Main: external[1], Metrics: external[2]}
				if len(external) == 5 {
					ep.Pull, ep.Pub = external[3], external[4]
				}
			default:
				t.Skipf("%s names another row (want %s@main@metrics)", externalEnv, sc.name)
			}
			runContract(t, sc, ep)
		})
	}
}

func runContract(t *testing.T, sc serverCase, ep servertest.Endpoints) {
	c := sc.dial(t, ep)
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()

	t.Run("Echo", func(t *testing.T) {
		for _, n := range []int{0, 1, 64, 4096, 1 << 20, bigPayload} {
			want := contract.Payload(n)
			got, err := c.Echo(ctx, want)
			if err != nil {
				t.Fatalf("Echo(%d bytes): %v", n, err)
			}
			if !bytes.Equal(got, want) {
				t.Fatalf("Echo(%d bytes) returned %d different bytes", n, len(got))
			}
		}
	})
	t.Run("GetUser", func(t *testing.T) {
		for _, id := range []int64{0, 1, 42, -7, math.MaxInt64} {
			got, err := c.GetUser(ctx, id)
			if err != nil {
				t.Fatalf("GetUser(%d): %v", id, err)
			}
			if want := contract.UserByID(id); got != want {
				t.Fatalf("GetUser(%d) = %+v, want %+v", id, got, want)
			}
		}
	})
	t.Run("Multiply", func(t *testing.T) {
		for _, ab := range [][2]int64{{6, 7}, {-3, 5}, {0, 99}, {1 << 31, 1 << 31}} {
			got, err := c.Multiply(ctx, ab[0], ab[1])
			if err != nil || got != contract.Multiply(ab[0], ab[1]) {
				t.Fatalf("Multiply(%d, %d) = %d, %v", ab[0], ab[1], got, err)
			}
		}
	})
	t.Run("Divide", func(t *testing.T) {
		for _, ab := range [][2]int64{{17, 5}, {-17, 5}, {17, -5}, {0, 3}} {
			q, r, err := c.Divide(ctx, ab[0], ab[1])
			wq, wr, _ := contract.Divide(ab[0], ab[1])
			if err != nil || q != wq || r != wr {
				t.Fatalf("Divide(%d, %d) = %d, %d, %v; want %d, %d", ab[0], ab[1], q, r, err, wq, wr)
			}
		}
	})
	t.Run("division by zero is a protocol error", func(t *testing.T) {
		_, _, err := c.Divide(ctx, 1, 0)
		if e := sc.isDivideByZero(err); e != nil {
			t.Fatal(e)
		}
	})
	t.Run("oversized payload is the protocol's size error", func(t *testing.T) {
		_, err := c.Echo(ctx, contract.Payload(maxPayload+1))
		if e := sc.isOversize(err); e != nil {
			t.Fatal(e)
		}
	})
	t.Run("unknown method is a protocol error", func(t *testing.T) {
		if err := sc.unknownMethod(t, ep); err != nil {
			t.Fatal(err)
		}
	})
	t.Run("garbage and truncated frames leave it serving", func(t *testing.T) {
		cases := map[string][]byte{"garbage bytes": garbage}
		for k, v := range sc.truncated {
			cases[k] = v
		}
		for name, b := range cases {
			sendRaw(t, ep.Main, b)
			// The long-lived client and a fresh one must both still work.
			if _, err := c.Multiply(ctx, 2, 3); err != nil {
				t.Fatalf("after %s: existing client: %v", name, err)
			}
			fresh := sc.dial(t, ep)
			_, err := fresh.GetUser(ctx, 1)
			fresh.Close()
			if err != nil {
				t.Fatalf("after %s: new client: %v", name, err)
			}
		}
	})
	for name, check := range sc.extra {
		t.Run(name, func(t *testing.T) { check(t, ep) })
	}
	t.Run("metrics counted the calls", func(t *testing.T) {
		for _, m := range []string{contract.MethodEcho, contract.MethodGetUser, contract.MethodMultiply, contract.MethodDivide} {
			want := map[string]string{"protocol": sc.protocol, "method": m, "code": sc.okCode}
			waitFor(t, "requests_total "+m, func() (bool, string) {
				v := value(scrape(t, ep.Metrics), "protobench_server_requests_total", want)
				return v >= 1, fmt.Sprintf("protobench_server_requests_total%v = %v", want, v)
			})
			h := map[string]string{"protocol": sc.protocol, "method": m}
			if v := value(scrape(t, ep.Metrics), "protobench_server_request_duration_seconds_count", h); v < 1 {
				t.Fatalf("protobench_server_request_duration_seconds_count%v = %v", h, v)
			}
		}
		// The division by zero was counted under an error code, not the success code.
		samples := scrape(t, ep.Metrics)
		all := value(samples, "protobench_server_requests_total", map[string]string{"protocol": sc.protocol, "method": contract.MethodDivide})
		ok := value(samples, "protobench_server_requests_total", map[string]string{"protocol": sc.protocol, "method": contract.MethodDivide, "code": sc.okCode})
		if all <= ok {
			t.Fatalf("Divide: %v requests counted, %v of them %s: the error was not counted", all, ok, sc.okCode)
		}
	})
}

func checkEchoStream(t *testing.T, ep servertest.Endpoints, protocol string) {
	c := dialGRPC(t, ep.Main)
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	before := value(scrape(t, ep.Metrics), "protobench_server_messages_total", map[string]string{"protocol": protocol, "pattern": "stream"})
	stream, err := c.c.EchoStream(ctx)
	if err != nil {
		t.Fatal(err)
	}
	const n = 20
	for i := 0; i < n; i++ {
		want := contract.Payload(100 + i)
		if err := stream.Send(&benchpb.EchoRequest{Payload: want}); err != nil {
			t.Fatalf("send %d: %v", i, err)
		}
		got, err := stream.Recv()
		if err != nil || !bytes.Equal(got.GetPayload(), want) {
			t.Fatalf("recv %d: %v", i, err)
		}
	}
	stream.CloseSend()
	if _, err := stream.Recv(); !errors.Is(err, io.EOF) {
		t.Fatalf("after CloseSend: %v, want io.EOF", err)
	}
	waitFor(t, "stream messages counted", func() (bool, string) {
		v := value(scrape(t, ep.Metrics), "protobench_server_messages_total", map[string]string{"protocol": protocol, "pattern": "stream"})
		return v-before >= n, fmt.Sprintf("%v new stream messages, want %d", v-before, n)
	})
}

func checkGRPCHealth(t *testing.T, ep servertest.Endpoints) {
	c := dialGRPC(t, ep.Main)
	defer c.Close()
	resp, err := healthpb.NewHealthClient(c.conn).Check(context.Background(), &healthpb.HealthCheckRequest{Service: "protobench.v1.Bench"})
	if err != nil || resp.GetStatus() != healthpb.HealthCheckResponse_SERVING {
		t.Fatalf("health Check = %v, %v; want SERVING", resp.GetStatus(), err)
	}
}

func checkRESTErrors(t *testing.T, ep servertest.Endpoints) {
	c := dialREST(t, ep.Main)
	defer c.Close()
	ctx := context.Background()
	tests := []struct {
		name, method, path, body string
		want                     int
	}{
		{"malformed JSON", http.MethodPost, "/v1/multiply", `{"a": 1, "b":`, 400},
		{"JSON of the wrong type", http.MethodPost, "/v1/divide", `{"a": "x", "b": 2}`, 400},
		{"missing field", http.MethodPost, "/v1/multiply", `{"a": 1}`, 400},
		{"trailing data", http.MethodPost, "/v1/multiply", `{"a": 1, "b": 2} {}`, 400},
		{"bad user id", http.MethodGet, "/v1/users/abc", "", 400},
		{"wrong method", http.MethodGet, "/v1/echo", "", 405},
		{"unknown path", http.MethodPost, "/v2/echo", "x", 404},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := c.do(ctx, tt.method, tt.path, "application/json", strings.NewReader(tt.body))
			if e := httpStatus(tt.want)(err); e != nil {
				t.Fatal(e)
			}
		})
	}
	t.Run("oversized body without a length", func(t *testing.T) {
		// A chunked body has no Content-Length, so the limit is found while reading.
		r := io.MultiReader(bytes.NewReader(contract.Payload(maxPayload)), strings.NewReader("x"))
		_, err := c.do(ctx, http.MethodPost, "/v1/echo", "application/octet-stream", io.NopCloser(r))
		if e := httpStatus(http.StatusRequestEntityTooLarge)(err); e != nil {
			t.Fatal(e)
		}
	})
}

// checkNetRPCPipelining is seed 004's client.Go pattern: many calls outstanding on one connection.
func checkNetRPCPipelining(t *testing.T, ep servertest.Endpoints) {
	c := dialNetRPC(t, ep.Main)
	defer c.Close()
	const n = 200
	calls := make([]*rpc.Call, n)
	replies := make([]int, n)
	done := make(chan *rpc.Call, n)
	for i := range calls {
		calls[i] = c.c.Go("Bench.Multiply", &netrpcserver.Args{A: i, B: 3}, &replies[i], done)
	}
	for range calls {
		call := <-done
		if call.Error != nil {
			t.Fatal(call.Error)
		}
	}
	for i, r := range replies {
		if r != 3*i {
			t.Fatalf("call %d: %d, want %d", i, r, 3*i)
		}
	}
}

func checkZMQBadFraming(t *testing.T, ep servertest.Endpoints) {
	c := dialZMQ(t, ep.Main, zmq.DEALER)
	defer c.Close()
	tests := []struct {
		name   string
		frames [][]byte
	}{
		{"method only", [][]byte{{}, []byte("Echo")}},
		{"short id", [][]byte{{}, []byte("Echo"), {1, 2, 3}, nil}},
		{"no delimiter", [][]byte{[]byte("Echo"), zmqwire.ID(5), nil, nil}},
		{"body not protobuf", [][]byte{{}, []byte("GetUser"), zmqwire.ID(9), {0xff, 0xff, 0xff}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			frames, err := c.raw(tt.frames)
			if err != nil {
				t.Fatal(err)
			}
			rep, err := zmqwire.DecodeReply(frames)
			if err != nil || rep.Status != zmqwire.StatusErr || len(rep.Body) == 0 {
				t.Fatalf("reply %+v, %v; want an ERR frame with a message", rep, err)
			}
		})
	}
}

func checkZMQREQ(t *testing.T, ep servertest.Endpoints) {
	ctx, err := zmq.NewContext()
	if err != nil {
		t.Fatal(err)
	}
	defer ctx.Term()
	sock, _ := ctx.NewSocket(zmq.REQ)
	defer sock.Close()
	sock.SetLinger(0)
	sock.SetRcvtimeo(30 * time.Second)
	if err := sock.Connect("tcp://" + ep.Main); err != nil {
		t.Fatal(err)
	}
	z := &zmqClient{ctx: ctx, sock: sock}
	body := []byte{0x08, 42} // GetUserRequest{id: 42}
	frames, err := z.raw(zmqwire.EncodeREQRequest(contract.MethodGetUser, 77, body))
	if err != nil {
		t.Fatal(err)
	}
	rep, err := zmqwire.DecodeReply(frames)
	if err != nil || rep.Err() != nil || rep.ID != 77 {
		t.Fatalf("REQ reply %+v, %v", rep, err)
	}
}

func checkZMQPipeline(t *testing.T, ep servertest.Endpoints) {
	ctx, _ := zmq.NewContext()
	defer ctx.Term()
	push, _ := ctx.NewSocket(zmq.PUSH)
	defer push.Close()
	push.SetLinger(5 * time.Second)
	if err := push.Connect("tcp://" + ep.Pull); err != nil {
		t.Fatal(err)
	}
	const n, size = 1000, 256
	msg := contract.Payload(size)
	for i := 0; i < n; i++ {
		if _, err := push.SendBytes(msg, 0); err != nil {
			t.Fatal(err)
		}
	}
	labels := map[string]string{"protocol": "zeromq", "pattern": "pipeline"}
	waitFor(t, "pipeline counted", func() (bool, string) {
		s := scrape(t, ep.Metrics)
		m, b := value(s, "protobench_server_messages_total", labels), value(s, "protobench_server_message_bytes_total", labels)
		return m == n && b == n*size, fmt.Sprintf("%v messages, %v bytes; want %d, %d", m, b, n, n*size)
	})
}

func checkZMQPublish(t *testing.T, ep servertest.Endpoints) {
	zctx, _ := zmq.NewContext()
	defer zctx.Term()
	sub, _ := zctx.NewSocket(zmq.SUB)
	defer sub.Close()
	sub.SetLinger(0)
	sub.SetSubscribe("")
	sub.SetRcvtimeo(100 * time.Millisecond)
	if err := sub.Connect("tcp://" + ep.Pub); err != nil {
		t.Fatal(err)
	}
	c := dialZMQ(t, ep.Main, zmq.DEALER)
	defer c.Close()
	want := contract.Payload(300)
	// A subscriber misses what is published before its subscription reaches the publisher (the
	// "slow joiner"), so publish until one arrives.
	var got []byte
	waitFor(t, "published payload received", func() (bool, string) {
		if err := c.request(zmqwire.MethodPublish, &benchpb.EchoRequest{Payload: want}, nil); err != nil {
			t.Fatalf("Publish: %v", err)
		}
		b, err := sub.RecvBytes(0)
		got = b
		return err == nil, fmt.Sprintf("SUB recv: %v", err)
	})
	if !bytes.Equal(got, want) {
		t.Fatalf("SUB got %d bytes, want the %d published", len(got), len(want))
	}
	if v := value(scrape(t, ep.Metrics), "protobench_server_messages_total", map[string]string{"protocol": "zeromq", "pattern": "pubsub"}); v < 1 {
		t.Fatalf("pubsub messages_total = %v", v)
	}
}
