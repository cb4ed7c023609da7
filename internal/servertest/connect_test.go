package servertest_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"connectrpc.com/connect"

	"github.com/protobench/protobench/internal/contract"
	"github.com/protobench/protobench/internal/contract/benchpb"
	"github.com/protobench/protobench/internal/contract/benchpb/benchpbconnect"
	"github.com/protobench/protobench/internal/server/connectserver"
	"github.com/protobench/protobench/internal/servertest"
)

// connectVariant is one protocol × encoding × transport cell connect-go's server answers.
type connectVariant struct {
	protocol string // connect, grpc-web
	json     bool
	h2c      bool
}

func (v connectVariant) String() string {
	if v.protocol != "connect" {
		return "connect-" + strings.ReplaceAll(v.protocol, "-", "") + "-" + connectVariant{"connect", v.json, v.h2c}.String()[len("connect-"):]
	}
	enc, tr := "proto", "h1"
	if v.json {
		enc = "json"
	}
	if v.h2c {
		tr = "h2c"
	}
	return fmt.Sprintf("%s-%s-%s", v.protocol, enc, tr)
}

// connectVariants are the wires connect-go's own client speaks to the server; gRPC is the
// grpcRow against the connect-grpc target, with grpc-go as the client.
var connectVariants = []connectVariant{
	{"connect", false, false}, {"connect", true, false}, {"connect", false, true}, {"connect", true, true},
	{"grpc-web", false, false}, {"grpc-web", false, true},
}

// connectClient calls the contract through connect-go's generated client.
type connectClient struct {
	hc *http.Client
	c  benchpbconnect.BenchClient
	v  connectVariant
}

func (v connectVariant) options() []connect.ClientOption {
	opts := []connect.ClientOption{connect.WithReadMaxBytes(bigMessages)}
	if v.json {
		opts = append(opts, connect.WithProtoJSON())
	}
	if v.protocol == "grpc-web" {
		opts = append(opts, connect.WithGRPCWeb())
	}
	return opts
}

func (v connectVariant) httpClient() *http.Client {
	tr := &http.Transport{DisableCompression: true}
	if v.h2c {
		var p http.Protocols
		p.SetUnencryptedHTTP2(true)
		tr.Protocols = &p
	}
	return &http.Client{Transport: tr}
}

func dialConnect(addr string, v connectVariant) *connectClient {
	hc := v.httpClient()
	return &connectClient{hc: hc, v: v, c: benchpbconnect.NewBenchClient(hc, "http://"+addr, v.options()...)}
}

func (c *connectClient) Echo(ctx context.Context, p []byte) ([]byte, error) {
	r, err := c.c.Echo(ctx, connect.NewRequest(&benchpb.EchoRequest{Payload: p}))
	if err != nil {
		return nil, err
	}
	return r.Msg.GetPayload(), nil
}

func (c *connectClient) GetUser(ctx context.Context, id int64) (contract.User, error) {
	r, err := c.c.GetUser(ctx, connect.NewRequest(&benchpb.GetUserRequest{Id: id}))
	if err != nil {
		return contract.User{}, err
	}
	u := r.Msg
	return contract.User{ID: u.GetId(), Name: u.GetName(), Email: u.GetEmail(), Age: u.GetAge()}, nil
}

func (c *connectClient) Multiply(ctx context.Context, a, b int64) (int64, error) {
	r, err := c.c.Multiply(ctx, connect.NewRequest(&benchpb.ArithRequest{A: a, B: b}))
	if err != nil {
		return 0, err
	}
	return r.Msg.GetProduct(), nil
}

func (c *connectClient) Divide(ctx context.Context, a, b int64) (int64, int64, error) {
	r, err := c.c.Divide(ctx, connect.NewRequest(&benchpb.ArithRequest{A: a, B: b}))
	if err != nil {
		return 0, 0, err
	}
	return r.Msg.GetQuotient(), r.Msg.GetRemainder(), nil
}

func (c *connectClient) Close() error { c.hc.CloseIdleConnections(); return nil }

// connectCode returns nil when err is a Connect error with code want.
func connectCode(want connect.Code) func(error) error {
	return func(err error) error {
		var ce *connect.Error
		if !errors.As(err, &ce) {
			return fmt.Errorf("%v: %w", err, errNotProtocolError)
		}
		if ce.Code() != want {
			return fmt.Errorf("code %v (%v), want %v", ce.Code(), err, want)
		}
		return nil
	}
}

// connectRows are the contract suite's rows for connect-go: gRPC through grpc-go's client, and
// every Connect and gRPC-Web cell through connect-go's own.
func connectRows() []serverCase {
	rows := []serverCase{grpcRow("connect-grpc", servertest.ConnectGRPC, "connect")}
	for _, v := range connectVariants {
		row := serverCase{
			name: v.String(), server: servertest.Connect, protocol: "connect", okCode: "OK",
			options:        []servertest.Option{servertest.WithMaxPayloadBytes(maxPayload)},
			dial:           func(_ testing.TB, ep servertest.Endpoints) client { return dialConnect(ep.Main, v) },
			isOversize:     connectCode(connect.CodeResourceExhausted),
			isDivideByZero: connectCode(connect.CodeInvalidArgument),
			unknownMethod: func(_ testing.TB, ep servertest.Endpoints) error {
				hc := v.httpClient()
				defer hc.CloseIdleConnections()
				nope := connect.NewClient[benchpb.EchoRequest, benchpb.EchoResponse](hc, "http://"+ep.Main+"/protobench.v1.Bench/Nope", v.options()...)
				_, err := nope.CallUnary(context.Background(), connect.NewRequest(&benchpb.EchoRequest{}))
				return connectCode(connect.CodeUnimplemented)(err)
			},
			truncated: map[string][]byte{
				"half a request line":     []byte("POST /protobench.v1.Bench/Ec"),
				"body cut short":          []byte("POST /protobench.v1.Bench/Echo HTTP/1.1\r\nHost: x\r\nContent-Type: application/proto\r\nContent-Length: 100\r\n\r\nabc"),
				"half a preface":          []byte("PRI * HTTP/2.0\r\n"),
				"preface then half frame": http2Truncated,
			},
			extra: map[string]func(*testing.T, servertest.Endpoints){},
		}
		if v.h2c {
			// Bidirectional streams need HTTP/2 in every protocol connect-go speaks.
			row.extra["EchoStream"] = func(t *testing.T, ep servertest.Endpoints) { checkConnectStream(t, ep, v) }
		}
		rows = append(rows, row)
	}
	return rows
}

func checkConnectStream(t *testing.T, ep servertest.Endpoints, v connectVariant) {
	c := dialConnect(ep.Main, v)
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	stream := c.c.EchoStream(ctx)
	for i := 0; i < 20; i++ {
		want := contract.Payload(100 + i)
		if err := stream.Send(&benchpb.EchoRequest{Payload: want}); err != nil {
			t.Fatalf("send %d: %v", i, err)
		}
		got, err := stream.Receive()
		if err != nil || !bytes.Equal(got.GetPayload(), want) {
			t.Fatalf("receive %d: %v", i, err)
		}
	}
	if err := stream.CloseRequest(); err != nil {
		t.Fatal(err)
	}
	if _, err := stream.Receive(); !errors.Is(err, io.EOF) {
		t.Fatalf("after CloseRequest: %v, want io.EOF", err)
	}
	// An oversized message ends the stream with the size error, not the connection.
	stream = c.c.EchoStream(ctx)
	stream.Send(&benchpb.EchoRequest{Payload: contract.Payload(maxPayload + 1)})
	_, err := stream.Receive()
	if e := connectCode(connect.CodeResourceExhausted)(err); e != nil {
		t.Fatal(e)
	}
	stream.CloseRequest()
	stream.CloseResponse()
	if _, err := c.GetUser(ctx, 1); err != nil {
		t.Fatalf("a call after the failed stream: %v", err)
	}
}

// ---- hostile clients ----

func startHostileConnect(t *testing.T, name string) servertest.Endpoints {
	return servertest.Start(t, name, servertest.WithMaxPayloadBytes(hostileMaxPayload),
		servertest.WithKnob("PROTOBENCH_HTTP_READ_TIMEOUT", hostileTimeout.String()),
		servertest.WithKnob("PROTOBENCH_HTTP_READ_HEADER_TIMEOUT", hostileTimeout.String()))
}

// checkConnectServing makes a normal call in each protocol connect-go serves, each on a new
// connection.
func checkConnectServing(t *testing.T, addr string) {
	t.Helper()
	for _, v := range connectVariants {
		c := dialConnect(addr, v)
		got, err := c.Echo(context.Background(), contract.Payload(1000))
		c.Close()
		if err != nil || !bytes.Equal(got, contract.Payload(1000)) {
			t.Fatalf("a normal %v Echo afterwards: %d bytes, %v", v, len(got), err)
		}
	}
	g := dialGRPC(t, addr)
	defer g.Close()
	if _, err := g.Echo(context.Background(), contract.Payload(1000)); err != nil {
		t.Fatalf("a normal gRPC Echo afterwards: %v", err)
	}
}

// TestConnectHostileClients: what TestRESTHostileClients asks of REST, asked of connect-go in
// the Connect protocol over HTTP/1.1, and of its gRPC protocol over h2c. The statuses are
// Connect's own: 429 for resource_exhausted, 504 for deadline_exceeded (connect-go's reading of
// the body's read deadline), and 200 for gRPC-Web, whose error is in its grpc-status.
func TestConnectHostileClients(t *testing.T) {
	t.Parallel()
	ep := startHostileConnect(t, servertest.Connect)
	post := func(procedure, ctype string, length int64) []byte {
		return fmt.Appendf(nil, "POST %s HTTP/1.1\r\nHost: x\r\nConnect-Protocol-Version: 1\r\nContent-Type: %s\r\nContent-Length: %d\r\n\r\n", procedure, ctype, length)
	}
	echo, multiply := benchpbconnect.BenchEchoProcedure, benchpbconnect.BenchMultiplyProcedure
	tests := []struct {
		name       string
		head, drip []byte
		want       int // status the server answers before closing; 0 = closes without one
	}{
		{"declared 10 GB proto echo", post(echo, "application/proto", tenGB), []byte{0x0a}, 429},
		{"declared 10 GB JSON multiply", post(multiply, "application/json", tenGB), []byte(" "), 429},
		{"declared 10 GB gRPC-Web echo", post(echo, "application/grpc-web+proto", tenGB), []byte{0}, 200},
		{"declared one byte above the limit", post(echo, "application/proto", int64(connectBodyLimit)+1), nil, 429},
		{"body that drips", post(echo, "application/proto", 1000), []byte{0x0a}, 504},
		{"JSON body that drips", post(multiply, "application/json", 1000), []byte(" "), 504},
		{"headers that drip", []byte("POST /protobench.v1.Bench/GetUser HTTP/1.1\r\n"), []byte("X-Slow: 1\r\n"), 0},
		{"connection that says nothing", nil, nil, 0},
		{"garbage", garbage, nil, 400},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := exchange(t, ep.Main, tt.head, tt.drip); got != tt.want {
				t.Fatalf("server answered %d before closing, want %d", got, tt.want)
			}
			checkConnectServing(t, ep.Main)
		})
	}
	t.Run("gRPC message declaring more than the limit", func(t *testing.T) {
		for _, declared := range []uint32{1<<32 - 1, uint32(connectserver.MessageLimit(hostileMaxPayload)) + 1} {
			if got := grpcStatusForDeclaredLength(t, ep.Main, declared); got != "8" {
				t.Fatalf("a message declaring %d bytes: grpc-status %q, want 8 (RESOURCE_EXHAUSTED)", declared, got)
			}
		}
		checkConnectServing(t, ep.Main)
	})
	t.Run("largest payload in every encoding", func(t *testing.T) {
		for _, v := range connectVariants {
			c := dialConnect(ep.Main, v)
			_, err := c.Echo(context.Background(), contract.Payload(hostileMaxPayload))
			_, over := c.Echo(context.Background(), contract.Payload(hostileMaxPayload+1))
			c.Close()
			if err != nil {
				t.Fatalf("%v: Echo of the largest payload: %v", v, err)
			}
			if e := connectCode(connect.CodeResourceExhausted)(over); e != nil {
				t.Fatalf("%v: Echo one byte above: %v", v, e)
			}
		}
	})
}

// connectBodyLimit is the connect server's unary body limit at hostileMaxPayload: the message
// limit plus the 5-byte envelope of gRPC and gRPC-Web.
var connectBodyLimit = connectserver.MessageLimit(hostileMaxPayload) + 5
