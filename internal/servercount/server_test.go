package servercount_test

import (
	"bytes"
	"context"
	"encoding/binary"
	"io"
	"net/http"
	"testing"

	"google.golang.org/protobuf/proto"

	"github.com/protobench/protobench/internal/contract"
	"github.com/protobench/protobench/internal/contract/benchpb"
	"github.com/protobench/protobench/internal/servercount"
	"github.com/protobench/protobench/internal/servertest"
)

// http200Tool is a load tool as h2load is for gRPC: it sends gRPC calls as plain HTTP/2
// requests and counts every HTTP 200 as a success, never reading grpc-status in the trailers.
type http200Tool struct{ c *http.Client }

func newHTTP200Tool() http200Tool {
	var p http.Protocols
	p.SetUnencryptedHTTP2(true)
	return http200Tool{c: &http.Client{Transport: &http.Transport{Protocols: &p}}}
}

// divide sends n Divide calls of a / b and returns how many answered HTTP 200.
func (h http200Tool) divide(t *testing.T, addr string, a, b int64, n int) (ok int64) {
	t.Helper()
	msg, err := proto.Marshal(&benchpb.ArithRequest{A: a, B: b})
	if err != nil {
		t.Fatal(err)
	}
	body := make([]byte, 5, 5+len(msg))
	binary.BigEndian.PutUint32(body[1:], uint32(len(msg)))
	body = append(body, msg...)
	for range n {
		req, err := http.NewRequest(http.MethodPost, "http://"+addr+"/protobench.v1.Bench/"+contract.MethodDivide, bytes.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("content-type", "application/grpc")
		req.Header.Set("te", "trailers")
		resp, err := h.c.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode == http.StatusOK {
			ok++
		}
	}
	return ok
}

// TestCountMismatchOnARealServer drives the real gRPC server with a tool that counts HTTP 200 as
// success: calls the server answers with an error (Divide by zero: InvalidArgument in the
// trailers of an HTTP 200) are flagged by the server's own count; calls it answers OK are not.
func TestCountMismatchOnARealServer(t *testing.T) {
	ep := servertest.Start(t, "grpc")
	url := "http://" + ep.Metrics + "/metrics"
	tool := newHTTP200Tool()
	ctx := context.Background()
	const n, inFlight = 200, 1
	for _, c := range []struct {
		name     string
		b        int64
		mismatch bool
	}{
		{"answered OK", contract.RequestB, false},
		{"answered InvalidArgument in an HTTP 200", 0, true},
	} {
		before, err := servercount.Read(ctx, url)
		if err != nil {
			t.Fatal(err)
		}
		toolOK := tool.divide(t, ep.Main, contract.RequestA, c.b, n)
		after, err := servercount.Read(ctx, url)
		if err != nil {
			t.Fatal(err)
		}
		run := after.Sub(before)
		if run.OK+run.Errors != n {
			t.Fatalf("%s: the server counted %d OK and %d errors over %d calls", c.name, run.OK, run.Errors, n)
		}
		if toolOK != n {
			t.Fatalf("%s: the tool saw %d HTTP 200 of %d: gRPC answers every call with 200", c.name, toolOK, n)
		}
		got, why := servercount.Mismatch(servercount.Check{ToolOK: toolOK, ServerOK: run.OK, InFlight: inFlight})
		if got != c.mismatch {
			t.Errorf("%s: server %+v, tool %d successes: mismatch %v (%s), want %v", c.name, run, toolOK, got, why, c.mismatch)
		}
	}
}

// TestFailEveryKnob: the gRPC server's fail_every knob fails every other call, which the
// server counts as an error and a tool counting HTTP 200 as a success does not.
func TestFailEveryKnob(t *testing.T) {
	ep := servertest.Start(t, "grpc", servertest.WithKnob("PROTOBENCH_GRPC_FAIL_EVERY", "2"))
	url := "http://" + ep.Metrics + "/metrics"
	ctx := context.Background()
	before, err := servercount.Read(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	const n = 100
	toolOK := newHTTP200Tool().divide(t, ep.Main, contract.RequestA, contract.RequestB, n)
	after, err := servercount.Read(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	run := after.Sub(before)
	if run != (servercount.Counts{OK: n / 2, Errors: n / 2}) || toolOK != n {
		t.Fatalf("fail_every 2 over %d calls: server %+v, tool %d HTTP 200s; want half failed at the server, all 200", n, run, toolOK)
	}
	if bad, _ := servercount.Mismatch(servercount.Check{ToolOK: toolOK, ServerOK: run.OK, InFlight: 1}); !bad {
		t.Fatal("a tool counting the failed half as successes was not flagged")
	}
}
