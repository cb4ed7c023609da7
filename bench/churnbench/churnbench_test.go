package churnbench

import (
	"bytes"
	"context"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/protobench/protobench/internal/loadgen/loadcmd"
	"github.com/protobench/protobench/internal/server/restserver"
	"github.com/protobench/protobench/internal/serverkit"
	"github.com/protobench/protobench/internal/tlscert"
)

// TestMain lets TestChurnIsNotClientBound run this test binary as the REST server and as our
// generator, under the names the bench gives them, so that a real run builds nothing.
func TestMain(m *testing.M) {
	switch filepath.Base(os.Args[0]) {
	case "rest":
		serverkit.Main(restserver.Spec)
	case ours:
		if len(os.Args) > 1 && os.Args[1] == "load" {
			os.Exit(loadcmd.Command(context.Background(), os.Args[2:], os.Stdout, os.Stderr))
		}
	}
	os.Exit(m.Run())
}

func TestFlags(t *testing.T) {
	o, err := parseFlags(nil, io.Discard)
	if err != nil || o.duration != 5*time.Second || o.inflight != 8 || len(o.rows) != 3 || o.tlsVersion != "1.3" {
		t.Fatalf("defaults %+v, %v", o, err)
	}
	for _, c := range []struct{ args, want string }{
		{"--duration 1s", "--duration must be at least 2s"},
		{"--connections 0", "--connections must be at least 1"},
		{"--server-core 1", "two different CPUs"},
		{"--tls-version 1.1", "--tls-version must be 1.3 or 1.2"},
		{"--rows tls-full,h2", `--rows: "h2" is not one of tls-full, tls-resumed, http`},
	} {
		if _, err := parseFlags(strings.Fields(c.args), io.Discard); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: err %v, want %q", c.args, err, c.want)
		}
	}
}

// The witnesses' own outputs, kept from a run of the bench (testdata).
func TestParseWitnesses(t *testing.T) {
	read := func(name string) []byte {
		b, err := os.ReadFile(filepath.Join("testdata", name))
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	if n, err := parseSTime(read("s_time-new.stdout")); n != 51 || err != nil {
		t.Errorf("s_time -new: %d, %v; want 51", n, err)
	}
	// -reuse: the timed connections after the one that made the session.
	if n, err := parseSTime(read("s_time-reuse.stdout")); n != 91 || err != nil {
		t.Errorf("s_time -reuse: %d, %v; want 91", n, err)
	}
	if _, err := parseSTime([]byte("ERROR\nconnect: Connection refused\n")); err == nil || !strings.Contains(err.Error(), "Connection refused") {
		t.Errorf("a failed s_time: %v", err)
	}
	n, secs, errs, err := parseWrk(read("wrk-close.stdout"))
	if n != 5807 || secs != 3.08 || errs != 0 || err != nil {
		t.Errorf("wrk: %d requests in %vs, %d errors, %v; want 5807 in 3.08 s", n, secs, errs, err)
	}
	_, _, errs, _ = parseWrk([]byte("  10 requests in 1.00s, 1KB read\n  Socket errors: connect 1, read 2, write 0, timeout 3\n  Non-2xx or 3xx responses: 4\n"))
	if errs != 10 {
		t.Errorf("wrk errors %d, want 1+2+3+4", errs)
	}
	h, err := parseHandshakes(bytes.NewReader(read("metrics.txt")))
	if err != nil || h.full != 950 || h.resumed != 410 || strings.Join(h.curveNames(), ",") != "X25519,X25519MLKEM768" {
		t.Errorf("handshakes %+v, %v", h, err)
	}
}

// TestChurnIsNotClientBound: the lab bench's rows for real, ours only (the witnesses when they
// are installed): a new connection for every request against the real REST server pinned to
// core 0, our generator pinned to core 1, must not be client-bound (our generator at 90 % of its
// core or more while the server used less of its own), and over TLS the server must have counted
// a handshake per connection, full ones in the full row and resumed ones in the resumed row.
func TestChurnIsNotClientBound(t *testing.T) {
	if testing.Short() {
		t.Skip("a real run of about 10 s")
	}
	if _, err := exec.LookPath("taskset"); err != nil || runtime.NumCPU() < 2 {
		t.Skip("needs taskset (util-linux) and two CPUs")
	}
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	bin := t.TempDir()
	for _, name := range []string{"rest", ours} {
		if err := os.Symlink(self, filepath.Join(bin, name)); err != nil {
			t.Fatal(err)
		}
	}
	o, err := parseFlags([]string{"--duration", "2s"}, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	b := &bench{o: o, stdout: io.Discard, stderr: io.Discard, binDir: bin, rawDir: t.TempDir(), tlsDir: t.TempDir(),
		tools: map[string]string{ours: filepath.Join(bin, ours)}}
	b.findTools()
	if _, err := tlscert.Generate(b.tlsDir, tlscert.Options{}); err != nil {
		t.Fatal(err)
	}
	var ms []measurement
	for _, row := range Rows {
		for _, g := range b.available(row) {
			m := b.measure(context.Background(), row, g)
			ms = append(ms, m)
			if m.err != nil {
				t.Errorf("%s with %s: %v", row, g, m.err)
				continue
			}
			if g != ours {
				continue
			}
			if m.connections == 0 || m.errors != 0 || m.clientBound() {
				t.Errorf("%s: %d connections, %d errors, generator %.0f %% and server %.0f %% of a core: want connections, no error, not client-bound",
					row, m.connections, m.errors, m.clientCPU, m.serverCPU)
			}
			// Over TLS every connection shook hands; the resumed row's first of each slot is full.
			switch {
			case row == "tls-full" && (m.full != float64(m.connections) || m.resumed != 0),
				row == "tls-resumed" && (m.full+m.resumed != float64(m.connections) || m.full > float64(o.inflight)):
				t.Errorf("%s: the server counted %v full and %v resumed handshakes for %d connections", row, m.full, m.resumed, m.connections)
			}
		}
	}
	var out bytes.Buffer
	report(&out, ms)
	t.Log("\n" + out.String())
}
