package tlstest

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/protobench/protobench/internal/servertest"
	"github.com/protobench/protobench/internal/tool"
	"github.com/protobench/protobench/internal/tool/h2load"
)

// TestH2loadOverTLS drives the host's h2load with the adapter's own command line for a TLS
// invocation (https://, ALPN h2 or http/1.1) against the REST server over TLS, and parses it.
func TestH2loadOverTLS(t *testing.T) {
	bin, err := exec.LookPath("h2load")
	if err != nil {
		t.Skip("h2load not installed (Debian nghttp2-client); the compose image has it")
	}
	dir, ca := certs(t)
	ep := servertest.Start(t, servertest.REST, servertest.WithTLS(dir))
	a := h2load.Adapter{}
	for _, v := range []string{"1.1", "2"} {
		inv := tool.Invocation{Target: "rest", Address: ep.Main, Scheme: "http", Method: "GetUser", Model: "closed",
			Connections: 2, Concurrency: 2, HTTPVersion: v, Encoding: "json", Duration: time.Second,
			CAFile: ca, ServerName: "localhost", RawDir: t.TempDir(), RawPrefix: "x"}
		if err := a.Check(inv); err != nil {
			t.Fatal(err)
		}
		out, err := exec.Command(bin, a.Args(inv)...).CombinedOutput()
		if err != nil {
			t.Fatalf("h2load %v: %v\n%s", a.Args(inv), err, out)
		}
		files := map[string][]byte{}
		entries, _ := os.ReadDir(inv.RawDir)
		for _, e := range entries {
			b, _ := os.ReadFile(filepath.Join(inv.RawDir, e.Name()))
			files[e.Name()] = b
		}
		rec, err := a.Parse(inv, tool.Raw{Stdout: out, Files: files})
		if err != nil {
			t.Fatalf("parse: %v\n%s", err, out)
		}
		if rec.Requests == 0 || rec.Errors != 0 {
			t.Errorf("HTTPS/%s: requests %d errors %d\n%s", v, rec.Requests, rec.Errors, out)
		}
	}
}
