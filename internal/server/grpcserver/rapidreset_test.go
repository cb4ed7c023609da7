package grpcserver

import (
	"bufio"
	"bytes"
	"context"
	"net"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/net/http2"
	"golang.org/x/net/http2/hpack"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/protobench/protobench/internal/contract/benchpb"
	"github.com/protobench/protobench/internal/serverkit"
	"github.com/protobench/protobench/internal/targets"
)

// attackerReport is what the server sent a rapid-reset client.
type attackerReport struct {
	maxStreams    uint32 // SETTINGS_MAX_CONCURRENT_STREAMS; 0 when not advertised (unlimited)
	refused       atomic.Int64
	goAway        atomic.Bool
	pingAcked     chan struct{}
	settingsAcked chan struct{}
}

// readServer reads the server's frames until the connection ends, answering its SETTINGS.
func readServer(fr *http2.Framer, wmu *sync.Mutex, w *bufio.Writer, rep *attackerReport) {
	for {
		f, err := fr.ReadFrame()
		if err != nil {
			return
		}
		switch f := f.(type) {
		case *http2.SettingsFrame:
			if f.IsAck() {
				continue
			}
			if v, ok := f.Value(http2.SettingMaxConcurrentStreams); ok {
				rep.maxStreams = v
			}
			wmu.Lock()
			fr.WriteSettingsAck()
			w.Flush()
			wmu.Unlock()
			close(rep.settingsAcked)
		case *http2.RSTStreamFrame:
			if f.ErrCode == http2.ErrCodeRefusedStream {
				rep.refused.Add(1)
			}
		case *http2.GoAwayFrame:
			rep.goAway.Store(true)
		case *http2.PingFrame:
			if f.IsAck() {
				close(rep.pingAcked)
			}
		}
	}
}

// TestRapidResetIsBounded is an HTTP/2 rapid-reset client (CVE-2023-44487) against grpc-go on a
// real socket: rounds of 1,500 EchoStream streams opened at once and reset at once, in a loop.
// The server must advertise its stream limit and refuse the streams beyond it (or close the
// connection), keep its goroutines within the limit, and still serve a well-behaved client.
// With grpc-go's own default (unlimited), it refuses nothing and runs a handler per stream.
func TestRapidResetIsBounded(t *testing.T) {
	const perRound, rounds = 1500, 20
	srv := New(Options{}, nil)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go srv.Serve(ln)
	defer srv.Shutdown(context.Background())
	base := runtime.NumGoroutine()

	conn, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	w := bufio.NewWriterSize(conn, 1<<16)
	fr := http2.NewFramer(w, conn)
	rep := &attackerReport{pingAcked: make(chan struct{}), settingsAcked: make(chan struct{})}
	var wmu sync.Mutex
	wmu.Lock()
	w.WriteString(http2.ClientPreface)
	fr.WriteSettings()
	w.Flush()
	wmu.Unlock()
	go readServer(fr, &wmu, w, rep)
	select {
	case <-rep.settingsAcked:
	case <-time.After(30 * time.Second):
		t.Fatal("the server sent no SETTINGS")
	}

	var hbuf bytes.Buffer
	enc := hpack.NewEncoder(&hbuf)
	block := func() []byte {
		hbuf.Reset()
		for _, f := range [][2]string{{":method", "POST"}, {":scheme", "http"}, {":authority", "grpc"},
			{":path", benchpb.Bench_EchoStream_FullMethodName}, {"content-type", "application/grpc"}, {"te", "trailers"}} {
			enc.WriteField(hpack.HeaderField{Name: f[0], Value: f[1]})
		}
		return bytes.Clone(hbuf.Bytes())
	}
	peak := 0
	id := uint32(1)
	var writeErr error
	for r := 0; r < rounds && writeErr == nil; r++ {
		first := id
		wmu.Lock()
		for range perRound {
			if writeErr = fr.WriteHeaders(http2.HeadersFrameParam{StreamID: id, BlockFragment: block(), EndHeaders: true}); writeErr != nil {
				break
			}
			id += 2
		}
		for s := first; s < id && writeErr == nil; s += 2 {
			writeErr = fr.WriteRSTStream(s, http2.ErrCodeCancel)
		}
		if writeErr == nil {
			writeErr = w.Flush()
		}
		wmu.Unlock()
		peak = max(peak, runtime.NumGoroutine())
	}
	if writeErr == nil {
		// Everything before the PING has been read once its ack comes back.
		wmu.Lock()
		fr.WritePing(false, [8]byte{1})
		writeErr = w.Flush()
		wmu.Unlock()
		if writeErr == nil {
			select {
			case <-rep.pingAcked:
			case <-time.After(60 * time.Second):
				t.Fatal("the server did not answer a PING after the resets")
			}
		}
	}
	closed := writeErr != nil || rep.goAway.Load()
	t.Logf("%d streams opened and reset; server advertised %d streams, refused %d, closed the connection: %v; goroutines %d before, %d at most",
		(id-1)/2, rep.maxStreams, rep.refused.Load(), closed, base, peak)
	if rep.maxStreams == 0 || rep.maxStreams > DefaultMaxConcurrentStreams {
		t.Errorf("the server advertises SETTINGS_MAX_CONCURRENT_STREAMS %d (0: unlimited), want at most %d", rep.maxStreams, DefaultMaxConcurrentStreams)
	}
	if rep.refused.Load() < perRound-int64(rep.maxStreams) && !closed {
		t.Errorf("the server refused %d of %d streams opened at once and did not close the connection: nothing bounds a rapid-reset client",
			rep.refused.Load(), perRound)
	}
	if limit := base + DefaultMaxConcurrentStreams + 200; peak > limit {
		t.Errorf("%d goroutines during the flood, above %d (the stream limit and the test's own)", peak, limit)
	}
	conn.Close()

	// A well-behaved client is still served.
	cc, err := grpc.NewClient(ln.Addr().String(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer cc.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := benchpb.NewBenchClient(cc).GetUser(ctx, &benchpb.GetUserRequest{Id: 7}); err != nil {
		t.Fatalf("a client after the flood: %v", err)
	}
}

// TestStreamKnobIsBounded checks the registry's bound against the server's, and that the
// server refuses a value above it (as the scenario's validation does).
func TestStreamKnobIsBounded(t *testing.T) {
	tg, _ := targets.Lookup("grpc")
	if k := tg.Knobs["max_concurrent_streams"]; k.Max != MaxConcurrentStreamsLimit {
		t.Errorf("registry bound %d, server bound %d", k.Max, MaxConcurrentStreamsLimit)
	}
	lookup := func(k string) (string, bool) {
		if k == "PROTOBENCH_GRPC_MAX_CONCURRENT_STREAMS" {
			return "100001", true
		}
		return "", false
	}
	cfg, build, err := serverkit.ParseConfig(Spec, nil, lookup)
	if err == nil {
		var svc serverkit.Service
		if svc, err = build(cfg, nil); svc != nil {
			svc.Shutdown(context.Background())
		}
	}
	if err == nil || !strings.Contains(err.Error(), "100000") {
		t.Fatalf("PROTOBENCH_GRPC_MAX_CONCURRENT_STREAMS=100001: got %v, want a refusal naming the bound", err)
	}
}
