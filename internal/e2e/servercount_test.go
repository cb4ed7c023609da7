package e2e

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/protobench/protobench/internal/record"
	"github.com/protobench/protobench/internal/results"
	"github.com/protobench/protobench/internal/swarm/swarmtest"
)

// serverCountScenario drives gRPC, REST and Connect with our generator (its own warm-up, which
// it reports) and h2load (its own warm-up, which it does not), then every other tool against
// every server that speaks its protocol (issue 35, item 5), several requests in flight on each
// connection.
const serverCountScenario = `name: servercount-e2e
description: every tool against every server that speaks its protocol; each server's own count against each tool's
defaults:
  warmup: 1s
  duration: 3s
  repeats: 1
  cooldown: 0s
steps:
  - name: getuser
    targets: [grpc, rest, connect]
    tools: [protobench, h2load]
    method: GetUser
    connections: 2
    concurrency: 4
  # Every other tool against every server that speaks its protocol (pairs a tool cannot drive
  # are left out of the plan): ghz on grpc, connect-grpc and python-grpc; k6 on rest, grpc,
  # connect-grpc and python-grpc; wrk on rest; h2load on connect-grpc and python-grpc too.
  - name: tools
    targets: [grpc, rest, connect-grpc, python-grpc]
    tools: [ghz, k6, wrk, h2load]
    method: GetUser
    connections: 2
    concurrency: 4
  # Compression gzip on each protocol our generator compresses: gRPC message compression, and
  # HTTP Content-Encoding for REST and the Connect protocol. Every reply must have gone out
  # gzip by the server's own count, and our generator must have read them so.
  - name: gzip
    targets: [grpc, rest, connect]
    tools: [protobench]
    method: Echo
    payload_bytes: 1000
    compression: gzip
    connections: 2
    concurrency: 4
  # Half the calls fail with Unavailable, in an HTTP 200: our generator reads grpc-status and
  # counts them as errors; h2load counts them as successes, and the server's count says so.
  - name: fail
    targets: [grpc]
    tools: [protobench, h2load]
    method: GetUser
    connections: 2
    concurrency: 4
    servers: {grpc: {knobs: {fail_every: 2}}}
`

// TestServerCountEndToEnd runs each tool against each server on the stack and checks that
// every record carries the server's own count, read exactly, agreeing with the tool's (no
// count-mismatch), the bytes per request at the server's interface, and what was on the wire;
// and that summary.md sets the work beneath each ratio side by side with no unequal-work.
func TestServerCountEndToEnd(t *testing.T) {
	c := requireE2E(t, "the server's own count through the compose stack")
	swarmtest.ComposeStack(t)
	dir := t.TempDir()
	scen := filepath.Join(dir, "servercount-e2e.yaml")
	if err := os.WriteFile(scen, []byte(serverCountScenario), 0o644); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "out")
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Minute)
	defer cancel()
	output, err := c.run(ctx, "run", scen, "--out", out)
	t.Logf("protobench run servercount-e2e.yaml:\n%s", output)
	if err != nil {
		t.Fatalf("protobench run: %v", err)
	}
	dirs, _ := filepath.Glob(filepath.Join(out, "*-servercount-e2e"))
	if len(dirs) != 1 {
		t.Fatalf("expected one results folder under %s, found %v", out, dirs)
	}
	recs, err := results.Load(dirs[0])
	if err != nil {
		t.Fatal(err)
	}
	if len(recs) != 23 {
		t.Fatalf("%d records, want 23 (3 targets × 2 tools; ghz ×3, k6 ×4, wrk ×1, h2load ×4; 3 targets under gzip; then grpc failing half its calls × 2 tools)", len(recs))
	}
	for _, r := range recs {
		name := r.Step + "/" + r.Target + "/" + r.Tool
		if !r.Valid() {
			t.Errorf("%s: failed: %s", name, r.Error)
			continue
		}
		if r.Step == "fail" {
			checkFailingServer(t, name, r)
			continue
		}
		checkServerCount(t, name, r)
		checkEncodings(t, name, r)
	}
	checkNoUnequalWork(t, dirs[0])
}

// checkServerCount holds a record of one of our servers, driven by a request/reply method on
// the compose engine, to its server count and wire facts.
func checkServerCount(t *testing.T, name string, r record.Record) {
	t.Helper()
	if r.HasFlag(record.FlagCountMismatch) {
		t.Errorf("%s: count-mismatch: %s", name, r.ServerCount)
	}
	if !strings.HasPrefix(r.ServerCount, "exact") {
		t.Errorf("%s: server_count %q, want an exact reading", name, r.ServerCount)
	}
	// A tool that stops at the end of its window cancels the requests it has in flight, and a
	// server that sees the cancellation before its reply is written counts an error (connect-go
	// does, on a busy host): at most one a request in flight, at the window's edge.
	inFlight := int64(r.Connections * max(r.Concurrency, 1))
	if r.ServerOK <= 0 || r.ServerErrors > inFlight {
		t.Errorf("%s: server_ok %d, server_errors %d, more than the %d in flight (tool: %d requests, %d errors)", name, r.ServerOK, r.ServerErrors, inFlight, r.Requests, r.Errors)
	}
	if r.Tool == "protobench" {
		// Our generator reports its warm-up, so the server's count of the measured window is
		// set against the tool's exactly, give or take the requests in flight.
		if d := r.ServerOK - r.Successes(); d > inFlight || -d > inFlight || r.WarmupRequests <= 0 {
			t.Errorf("%s: server_ok %d against the tool's %d successes (warm-up %d requests): more apart than %d in flight",
				name, r.ServerOK, r.Successes(), r.WarmupRequests, inFlight)
		}
	}
	w := r.Wire
	if w == nil {
		t.Errorf("%s: no wire facts", name)
		return
	}
	if w.RxBytesPerRequest <= 0 || w.TxBytesPerRequest <= 0 {
		t.Errorf("%s: %g B in and %g B out per request at the server's interface, want both > 0 from cAdvisor", name, w.RxBytesPerRequest, w.TxBytesPerRequest)
	}
	if w.Protocol == "" || w.Compression == "" || w.RequestsPerConnection <= 0 {
		t.Errorf("%s: wire %+v: want protocol, compression and requests per connection", name, *w)
	}
}

// checkEncodings holds a record to its compression setting by the server's own count of
// encodings, and our generator's records to its count of compressed replies as well.
func checkEncodings(t *testing.T, name string, r record.Record) {
	t.Helper()
	want := "identity"
	if r.CompressionOf() == "gzip" {
		want = "gzip"
	}
	if r.ReplyEncoding != want || (r.Wire != nil && r.Wire.Compression != r.CompressionOf()) {
		t.Errorf("%s: compression %s, the server's replies went out %q (wire says %+v)", name, r.CompressionOf(), r.ReplyEncoding, r.Wire)
	}
	if r.Tool != "protobench" {
		return
	}
	if r.ClientCompressedReplies == nil {
		t.Errorf("%s: no client_compressed_replies from our generator", name)
		return
	}
	if n := *r.ClientCompressedReplies; (want == "gzip") != (n > 0) {
		t.Errorf("%s: compression %s, our generator read %d compressed replies", name, r.CompressionOf(), n)
	}
	if want == "gzip" && r.Method == "Echo" && r.RequestEncoding != "gzip" {
		t.Errorf("%s: compression gzip, the server's requests came in %q", name, r.RequestEncoding)
	}
}

// checkFailingServer: against a server failing half its calls with a gRPC status in an HTTP
// 200, the tool that reads grpc-status agrees with the server, and h2load, which does not, is
// flagged count-mismatch.
func checkFailingServer(t *testing.T, name string, r record.Record) {
	t.Helper()
	if r.ServerErrors <= 0 || r.ServerOK <= 0 {
		t.Errorf("%s: server_ok %d, server_errors %d: want both, half the calls failing (%s)", name, r.ServerOK, r.ServerErrors, r.ServerCount)
	}
	want := r.Tool == "h2load"
	if got := r.HasFlag(record.FlagCountMismatch); got != want {
		t.Errorf("%s: count-mismatch %v, want %v: the tool %d successes of %d, the server %d OK and %d errors (%s)",
			name, got, want, r.Successes(), r.Requests, r.ServerOK, r.ServerErrors, r.ServerCount)
	}
}

// checkNoUnequalWork fails on a ratio of summary.md whose sides did unequal work, and wants
// the section that sets each ratio's work side by side.
func checkNoUnequalWork(t *testing.T, dir string) {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, "summary.md"))
	if err != nil {
		t.Fatal(err)
	}
	s := string(b)
	if strings.Contains(s, "unequal-work") {
		t.Errorf("summary.md has a ratio whose sides did unequal work:\n%s", s)
	}
	if !strings.Contains(s, "## The work beneath each ratio") {
		t.Errorf("summary.md does not set each ratio's work side by side:\n%s", s)
	}
}
