package servertest_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptrace"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	zmq "github.com/pebbe/zmq4"
	"golang.org/x/net/http2"
	"golang.org/x/net/http2/hpack"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	"github.com/protobench/protobench/internal/contract"
	"github.com/protobench/protobench/internal/contract/benchpb"
	"github.com/protobench/protobench/internal/server/netrpcserver"
	"github.com/protobench/protobench/internal/server/restserver"
	"github.com/protobench/protobench/internal/serverkit"
	"github.com/protobench/protobench/internal/servertest"
	"github.com/protobench/protobench/internal/wire/zmqwire"
)

// Hostile clients: declared lengths far above the limit, bodies and messages that drip in, and
// garbage, each on a real socket against a real server, which must refuse or close that one
// connection and go on serving everyone else.

// hostileMaxPayload is the payload limit of the servers here; hostileLimit the message limit
// every server derives from it.
const (
	hostileMaxPayload = 1 << 20
	hostileLimit      = hostileMaxPayload + serverkit.FramingSlackBytes
	// hostileTimeout is the servers' read timeout here, short so that a slow client is cut off
	// within the test; giveUp is how long a test waits for the server before calling it stuck.
	hostileTimeout = time.Second
	giveUp         = 30 * time.Second
)

// tenGB is a declared length no server should believe.
const tenGB = 10 << 30

func startHostileREST(t *testing.T) servertest.Endpoints {
	return servertest.Start(t, servertest.REST, servertest.WithMaxPayloadBytes(hostileMaxPayload),
		servertest.WithKnob("PROTOBENCH_HTTP_READ_TIMEOUT", hostileTimeout.String()),
		servertest.WithKnob("PROTOBENCH_HTTP_READ_HEADER_TIMEOUT", hostileTimeout.String()))
}

// exchange writes head on a fresh connection and returns the status of the HTTP response the
// server sent before closing it, 0 if none (see rawExchange).
func exchange(t *testing.T, addr string, head []byte, drip []byte) int {
	t.Helper()
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	got := rawExchange(t, conn, head, drip)
	if len(got) == 0 {
		return 0
	}
	resp, err := http.ReadResponse(bufio.NewReader(bytes.NewReader(got)), nil)
	if err != nil {
		t.Fatalf("the server answered %q: %v", got, err)
	}
	resp.Body.Close()
	return resp.StatusCode
}

// rawExchange writes head on conn, keeps dripping one byte of drip every 50 ms while the
// connection lasts (nothing when drip is empty), and reads until the server closes. It returns
// what the server sent, and fails the test when the server has not closed the connection after
// giveUp.
func rawExchange(t *testing.T, conn net.Conn, head []byte, drip []byte) []byte {
	t.Helper()
	if _, err := conn.Write(head); err != nil {
		t.Fatal(err)
	}
	stop := make(chan struct{})
	var wg sync.WaitGroup
	defer wg.Wait()
	defer close(stop)
	if len(drip) > 0 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			tick := time.NewTicker(50 * time.Millisecond)
			defer tick.Stop()
			for i := 0; ; i = (i + 1) % len(drip) {
				select {
				case <-stop:
					return
				case <-tick.C:
				}
				if _, err := conn.Write(drip[i : i+1]); err != nil {
					return
				}
			}
		}()
	}
	conn.SetReadDeadline(time.Now().Add(giveUp))
	got, err := io.ReadAll(conn)
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		t.Fatalf("the server still held the connection after %v (it sent %q)", giveUp, got)
	}
	return got
}

// checkRESTServing makes a normal request over both transports, each on a new connection.
func checkRESTServing(t *testing.T, addr string) {
	t.Helper()
	for _, v := range []restVariant{{}, {h2c: true, protobuf: true}} {
		c := dialRESTVariant(addr, v)
		got, err := c.Echo(context.Background(), contract.Payload(1000))
		c.Close()
		if err != nil || !bytes.Equal(got, contract.Payload(1000)) {
			t.Fatalf("a normal %v Echo afterwards: %d bytes, %v", v, len(got), err)
		}
	}
}

func TestRESTHostileClients(t *testing.T) {
	t.Parallel()
	ep := startHostileREST(t)
	post := func(path, ctype string, length int64) []byte {
		return fmt.Appendf(nil, "POST %s HTTP/1.1\r\nHost: x\r\nContent-Type: %s\r\nContent-Length: %d\r\n\r\n", path, ctype, length)
	}
	tests := []struct {
		name       string
		head, drip []byte
		want       int // status the server answers before closing; 0 = closes without one
	}{
		{"declared 10 GB raw echo", post(restserver.PathEcho, restserver.ContentTypeOctetStream, tenGB), []byte("x"), 413},
		{"declared 10 GB protobuf echo", post(restserver.PathEcho, restserver.ContentTypeProtobuf, tenGB), []byte{0x0a}, 413},
		{"declared 10 GB JSON multiply", post(restserver.PathMultiply, restserver.ContentTypeJSON, tenGB), []byte(" "), 413},
		{"declared 10 GB protobuf divide", post(restserver.PathDivide, restserver.ContentTypeProtobuf, tenGB), []byte{0x08}, 413},
		{"declared one byte above the limit", post(restserver.PathEcho, restserver.ContentTypeProtobuf, hostileLimit+1), nil, 413},
		{"body that drips", post(restserver.PathEcho, restserver.ContentTypeOctetStream, 1000), []byte("slow"), 408},
		{"JSON body that drips", post(restserver.PathMultiply, restserver.ContentTypeJSON, 1000), []byte(" "), 408},
		{"headers that drip", []byte("GET /v1/users/1 HTTP/1.1\r\n"), []byte("X-Slow: 1\r\n"), 0},
		{"connection that says nothing", nil, nil, 0},
		{"garbage", garbage, nil, 400},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := exchange(t, ep.Main, tt.head, tt.drip); got != tt.want {
				t.Fatalf("server answered %d before closing, want %d", got, tt.want)
			}
			checkRESTServing(t, ep.Main)
		})
	}
	t.Run("declared 10 GB over h2c", func(t *testing.T) {
		c := dialRESTVariant(ep.Main, restVariant{h2c: true})
		defer c.Close()
		req, _ := http.NewRequest(http.MethodPost, c.base+restserver.PathEcho, endless{})
		req.ContentLength = tenGB
		resp, err := c.hc.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusRequestEntityTooLarge || resp.ProtoMajor != 2 {
			t.Fatalf("%s %s, want 413 over HTTP/2", resp.Proto, resp.Status)
		}
		checkRESTServing(t, ep.Main)
	})
	t.Run("body that drips over h2c", func(t *testing.T) {
		c := dialRESTVariant(ep.Main, restVariant{h2c: true})
		defer c.Close()
		pr, pw := io.Pipe()
		defer pw.Close()
		go func() {
			for {
				time.Sleep(50 * time.Millisecond)
				if _, err := pw.Write([]byte("x")); err != nil {
					return
				}
			}
		}()
		ctx, cancel := context.WithTimeout(context.Background(), giveUp)
		defer cancel()
		req, _ := http.NewRequestWithContext(ctx, http.MethodPost, c.base+restserver.PathEcho, pr)
		req.ContentLength = 1000
		resp, err := c.hc.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusRequestTimeout {
			t.Fatalf("%s, want 408", resp.Status)
		}
		// Only the stream was cut: the same connection still serves.
		var reused bool
		trace := &httptrace.ClientTrace{GotConn: func(i httptrace.GotConnInfo) { reused = i.Reused }}
		if _, err := c.call(httptrace.WithClientTrace(context.Background(), trace), http.MethodGet, restserver.PathUsers+"1", nil, "", restserver.ContentTypeJSON); err != nil || !reused {
			t.Fatalf("a request on the same h2c connection: reused %v, %v", reused, err)
		}
	})
}

// endless is a body that never ends.
type endless struct{}

func (endless) Read(p []byte) (int, error) { clear(p); return len(p), nil }

// TestRESTIdleKeepAliveOutlivesReadTimeout checks that the read timeout counts from a request's
// first byte, not from the last one: connections that wait between requests longer than the
// timeout, as a benchmark's pauses do, stay open on both transports.
func TestRESTIdleKeepAliveOutlivesReadTimeout(t *testing.T) {
	t.Parallel()
	ep := startHostileREST(t)
	for _, v := range []restVariant{{}, {h2c: true}} {
		t.Run(v.String(), func(t *testing.T) {
			t.Parallel()
			c := dialRESTVariant(ep.Main, v)
			defer c.Close()
			var conns []string
			trace := &httptrace.ClientTrace{GotConn: func(i httptrace.GotConnInfo) { conns = append(conns, i.Conn.LocalAddr().String()) }}
			ctx := httptrace.WithClientTrace(context.Background(), trace)
			for i := 0; i < 2; i++ {
				if i > 0 {
					time.Sleep(hostileTimeout + hostileTimeout/2)
				}
				if _, err := c.GetUser(ctx, 1); err != nil {
					t.Fatalf("request %d: %v", i+1, err)
				}
			}
			if len(conns) != 2 || conns[0] != conns[1] {
				t.Fatalf("requests went over connections %v, want one connection kept across the pause", conns)
			}
		})
	}
}

// TestRESTBodyMemoryFollowsArrival holds many requests that declare a body near the limit but
// send almost nothing, and checks that the server's heap grew by far less than the declared
// lengths: bodies are buffered as they arrive, not by what a client claims. It runs alone (not
// parallel) because it reads the process's heap, which the in-process server shares.
func TestRESTBodyMemoryFollowsArrival(t *testing.T) {
	const conns, declared = 32, 10_000_000
	ep := servertest.Start(t, servertest.REST, servertest.WithMaxPayloadBytes(declared))
	runtime.GC()
	var before runtime.MemStats
	runtime.ReadMemStats(&before)
	var open []net.Conn
	defer func() {
		for _, c := range open {
			c.Close()
		}
	}()
	for i := 0; i < conns; i++ {
		c, err := net.Dial("tcp", ep.Main)
		if err != nil {
			t.Fatal(err)
		}
		open = append(open, c)
		fmt.Fprintf(c, "POST %s HTTP/1.1\r\nHost: x\r\nContent-Type: %s\r\nContent-Length: %d\r\n\r\nx", restserver.PathEcho, restserver.ContentTypeOctetStream, declared)
	}
	// Every handler is then waiting inside readBody for the rest of its body.
	waitFor(t, "handlers reading bodies", func() (bool, string) {
		n := strings.Count(allStacks(), "restserver.(*Server).readBody(")
		return n >= conns, fmt.Sprintf("%d of %d handlers in readBody", n, conns)
	})
	var after runtime.MemStats
	runtime.ReadMemStats(&after)
	grew := int64(after.HeapAlloc) - int64(before.HeapAlloc)
	if limit := int64(conns * declared / 8); grew > limit {
		t.Fatalf("heap grew by %d bytes while %d requests declared %d bytes each and sent 1: want under %d", grew, conns, declared, limit)
	}
	t.Logf("heap grew by %d bytes for %d requests declaring %d bytes each", grew, conns, declared)
}

func allStacks() string {
	buf := make([]byte, 1<<20)
	for {
		n := runtime.Stack(buf, true)
		if n < len(buf) {
			return string(buf[:n])
		}
		buf = make([]byte, 2*len(buf))
	}
}

// ---- net/rpc ----

func startHostileNetRPC(t *testing.T) servertest.Endpoints {
	return servertest.Start(t, servertest.NetRPC, servertest.WithMaxPayloadBytes(hostileMaxPayload),
		servertest.WithKnob("PROTOBENCH_NETRPC_READ_TIMEOUT", hostileTimeout.String()))
}

// gobLength is a gob message length prefix: an unsigned integer as gob encodes it.
func gobLength(n uint64) []byte {
	if n < 128 {
		return []byte{byte(n)}
	}
	var b [8]byte
	binary.BigEndian.PutUint64(b[:], n)
	i := 0
	for b[i] == 0 {
		i++
	}
	return append([]byte{byte(-(8 - i))}, b[i:]...)
}

func checkNetRPCServing(t *testing.T, addr string) {
	t.Helper()
	c := dialNetRPC(t, addr)
	defer c.Close()
	got, err := c.Echo(context.Background(), contract.Payload(hostileMaxPayload))
	if err != nil || len(got) != hostileMaxPayload {
		t.Fatalf("a normal Echo of the largest payload afterwards: %d bytes, %v", len(got), err)
	}
}

func TestNetRPCHostileClients(t *testing.T) {
	t.Parallel()
	ep := startHostileNetRPC(t)
	tests := []struct {
		name       string
		head, drip []byte
	}{
		// gob itself refuses 8 GiB and more; below that it would allocate what is declared.
		{"declared 1<<40 bytes", gobLength(1 << 40), []byte{0}},
		{"declared 4 GiB", gobLength(4 << 30), []byte{0}},
		{"declared one byte above the limit", gobLength(hostileLimit + 1), []byte{0}},
		{"length prefix that is not a number", []byte{0x80, 1, 2}, nil},
		{"message that drips", gobLength(1000), []byte{7}},
		{"garbage", garbage, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := exchange(t, ep.Main, tt.head, tt.drip); got != 0 {
				t.Fatalf("server answered %d", got)
			}
			checkNetRPCServing(t, ep.Main)
		})
	}
	t.Run("a message of exactly the limit is read", func(t *testing.T) {
		// Whatever it holds (here not a valid request), a message at the limit reaches gob,
		// which closes the connection only once the message has been read whole.
		conn, err := net.Dial("tcp", ep.Main)
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		msg := append(gobLength(hostileLimit), make([]byte, hostileLimit)...)
		if _, err := conn.Write(msg); err != nil {
			t.Fatalf("the server stopped reading a message of %d bytes, at the limit: %v", hostileLimit, err)
		}
		checkNetRPCServing(t, ep.Main)
	})
}

// TestNetRPCBusyAndIdleConnectionsStay checks that the message timeout cuts only messages that
// stall: a connection kept busy with calls, whose messages span many reads, for longer than the
// timeout, and one idle between calls for longer than the timeout, both keep working.
func TestNetRPCBusyAndIdleConnectionsStay(t *testing.T) {
	t.Parallel()
	ep := startHostileNetRPC(t)
	c := dialNetRPC(t, ep.Main)
	defer c.Close()
	payload := contract.Payload(256 << 10)
	end := time.Now().Add(2 * hostileTimeout)
	calls := 0
	for time.Now().Before(end) {
		var reply netrpcserver.EchoReply
		if err := c.c.Call("Bench.Echo", &netrpcserver.EchoArgs{Payload: payload}, &reply); err != nil {
			t.Fatalf("busy connection, call %d: %v", calls+1, err)
		}
		calls++
	}
	time.Sleep(hostileTimeout + hostileTimeout/2)
	if _, err := c.GetUser(context.Background(), 1); err != nil {
		t.Fatalf("after %d calls and an idle pause longer than the timeout: %v", calls, err)
	}
}

// ---- gRPC (Go and Python) ----

// TestGRPCDeclaredLengthAboveLimit sends a gRPC message whose 5-byte prefix declares far more
// than the limit, on a raw HTTP/2 connection, and expects RESOURCE_EXHAUSTED for that stream at
// once and a server that goes on serving. Only grpc-go: grpcio's C core (python-grpc) checks the
// size only once the whole message has arrived (TestGRPCMessageLimit covers its limit).
func TestGRPCDeclaredLengthAboveLimit(t *testing.T) {
	t.Parallel()
	ep := servertest.Start(t, servertest.GRPC, servertest.WithMaxPayloadBytes(hostileMaxPayload))
	for _, declared := range []uint32{1<<32 - 1, hostileLimit + 1} {
		if got := grpcStatusForDeclaredLength(t, ep.Main, declared); got != "8" {
			t.Fatalf("a message declaring %d bytes: grpc-status %q, want 8 (RESOURCE_EXHAUSTED)", declared, got)
		}
	}
	c := dialGRPC(t, ep.Main)
	defer c.Close()
	if _, err := c.Echo(context.Background(), contract.Payload(hostileMaxPayload)); err != nil {
		t.Fatalf("a normal Echo of the largest payload afterwards: %v", err)
	}
}

// TestGRPCMessageLimit checks that both gRPC servers refuse a message one byte above the shared
// limit in their transport ("larger than max"), and let a message of exactly the limit through
// to the handler, which refuses its payload as above the payload limit.
func TestGRPCMessageLimit(t *testing.T) {
	t.Parallel()
	for _, server := range []string{servertest.GRPC, servertest.PythonGRPC} {
		t.Run(server, func(t *testing.T) {
			t.Parallel()
			ep := servertest.Start(t, server, servertest.WithMaxPayloadBytes(hostileMaxPayload))
			c := dialGRPC(t, ep.Main)
			defer c.Close()
			for _, tt := range []struct {
				size int
				want string
			}{
				{hostileLimit + 1, "larger than max"},
				{hostileLimit, "exceeds the limit"},
			} {
				_, err := c.Echo(context.Background(), payloadForEchoRequest(tt.size))
				if status.Code(err) != codes.ResourceExhausted || !strings.Contains(err.Error(), tt.want) {
					t.Fatalf("EchoRequest of %d bytes: %v; want RESOURCE_EXHAUSTED saying %q", tt.size, err, tt.want)
				}
			}
			if _, err := c.Echo(context.Background(), contract.Payload(hostileMaxPayload)); err != nil {
				t.Fatalf("a normal Echo of the largest payload afterwards: %v", err)
			}
		})
	}
}

// payloadForEchoRequest returns a payload whose EchoRequest encodes to exactly size bytes.
func payloadForEchoRequest(size int) []byte {
	for n := size; n > 0; n-- {
		if proto.Size(&benchpb.EchoRequest{Payload: contract.Payload(n)}) == size {
			return contract.Payload(n)
		}
	}
	panic("no payload size fits")
}

// grpcStatusForDeclaredLength opens an HTTP/2 connection, starts an Echo call whose message
// prefix declares length bytes, sends a few of them, and returns the grpc-status the server
// answers with.
func grpcStatusForDeclaredLength(t *testing.T, addr string, length uint32) string {
	t.Helper()
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	conn.SetDeadline(time.Now().Add(giveUp))
	if _, err := conn.Write([]byte(http2.ClientPreface)); err != nil {
		t.Fatal(err)
	}
	fr := http2.NewFramer(conn, conn)
	fr.ReadMetaHeaders = hpack.NewDecoder(4096, nil)
	var block bytes.Buffer
	enc := hpack.NewEncoder(&block)
	for _, f := range [][2]string{
		{":method", "POST"}, {":scheme", "http"}, {":path", "/protobench.v1.Bench/Echo"}, {":authority", addr},
		{"content-type", "application/grpc"}, {"te", "trailers"},
	} {
		enc.WriteField(hpack.HeaderField{Name: f[0], Value: f[1]})
	}
	prefix := make([]byte, 5)
	binary.BigEndian.PutUint32(prefix[1:], length)
	err = errors.Join(
		fr.WriteSettings(),
		fr.WriteHeaders(http2.HeadersFrameParam{StreamID: 1, BlockFragment: block.Bytes(), EndHeaders: true}),
		fr.WriteData(1, false, append(prefix, 0x0a, 0x10, 'x')),
	)
	if err != nil {
		t.Fatal(err)
	}
	for {
		f, err := fr.ReadFrame()
		if err != nil {
			t.Fatalf("reading the server's answer: %v", err)
		}
		switch f := f.(type) {
		case *http2.SettingsFrame:
			if !f.IsAck() {
				fr.WriteSettingsAck()
			}
		case *http2.PingFrame:
			if !f.IsAck() {
				fr.WritePing(true, f.Data)
			}
		case *http2.MetaHeadersFrame:
			if s := f.PseudoValue("status"); s != "" && s != "200" {
				t.Fatalf("HTTP status %s", s)
			}
			for _, hf := range f.Fields {
				if hf.Name == "grpc-status" {
					return hf.Value
				}
			}
		case *http2.RSTStreamFrame:
			t.Fatalf("stream reset (%v) without a grpc-status", f.ErrCode)
		case *http2.GoAwayFrame:
			t.Fatalf("connection closed (GOAWAY %v) without a grpc-status", f.ErrCode)
		}
	}
}

// ---- ZeroMQ ----

// TestZMQFrameAboveLimit speaks ZMTP 3.0 by hand as a DEALER: a handshake and a GetUser that
// must be answered (so the handshake is right), then a frame header declaring more than the
// limit, on which libzmq must drop the connection at once rather than buffer or wait for the
// frame; the server must go on serving.
func TestZMQFrameAboveLimit(t *testing.T) {
	t.Parallel()
	ep := servertest.Start(t, servertest.ZeroMQ, servertest.WithMaxPayloadBytes(hostileMaxPayload))
	for _, declared := range []uint64{1 << 40, hostileLimit + 1} {
		t.Run(fmt.Sprint(declared), func(t *testing.T) {
			conn, err := net.Dial("tcp", ep.Main)
			if err != nil {
				t.Fatal(err)
			}
			defer conn.Close()
			conn.SetReadDeadline(time.Now().Add(giveUp))
			// libzmq drops a peer whose first frames arrive along with its handshake, so
			// wait for the server's greeting (64 bytes) and READY command first.
			if _, err := conn.Write(zmtpDealerHandshake()); err != nil {
				t.Fatal(err)
			}
			greeting := make([]byte, 66)
			if _, err := io.ReadFull(conn, greeting); err != nil {
				t.Fatalf("server greeting: %v", err)
			}
			if _, err := io.ReadFull(conn, make([]byte, greeting[65])); err != nil {
				t.Fatalf("server READY: %v", err)
			}
			var msg []byte
			for i, f := range zmqwire.EncodeRequest(contract.MethodGetUser, 1, []byte{0x08, 42}) {
				flags := byte(0x01) // more frames follow
				if i == 3 {
					flags = 0
				}
				msg = append(append(msg, flags, byte(len(f))), f...)
			}
			if _, err := conn.Write(msg); err != nil {
				t.Fatal(err)
			}
			var seen []byte
			for !bytes.Contains(seen, []byte(contract.UserByID(42).Email)) {
				buf := make([]byte, 4096)
				n, err := conn.Read(buf)
				seen = append(seen, buf[:n]...)
				if err != nil {
					t.Fatalf("no GetUser reply over the hand-made ZMTP connection (%v); got %q", err, seen)
				}
			}
			frame := binary.BigEndian.AppendUint64([]byte{0x02}, declared) // a last frame, 8-byte size
			rawExchange(t, conn, frame, []byte{0})
			c := dialZMQ(t, ep.Main, zmq.DEALER)
			defer c.Close()
			if _, err := c.Echo(context.Background(), contract.Payload(hostileMaxPayload)); err != nil {
				t.Fatalf("a normal Echo of the largest payload afterwards: %v", err)
			}
		})
	}
}

// zmtpDealerHandshake is a ZMTP 3.0 greeting with the NULL mechanism and the READY command of a
// DEALER socket.
func zmtpDealerHandshake() []byte {
	g := make([]byte, 64)
	g[0], g[8], g[9], g[10] = 0xff, 1, 0x7f, 3 // as libzmq sends it
	copy(g[12:], "NULL")
	var ready []byte
	ready = append(ready, 5)
	ready = append(ready, "READY"...)
	ready = append(ready, byte(len("Socket-Type")))
	ready = append(ready, "Socket-Type"...)
	ready = binary.BigEndian.AppendUint32(ready, uint32(len("DEALER")))
	ready = append(ready, "DEALER"...)
	return append(append(g, 0x04, byte(len(ready))), ready...)
}
