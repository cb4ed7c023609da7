package connectdriver_test

import (
	"context"
	"io"
	"testing"

	"github.com/protobench/protobench/internal/contract"
	"github.com/protobench/protobench/internal/loadgen"
	_ "github.com/protobench/protobench/internal/loadgen/driver/connect"
	"github.com/protobench/protobench/internal/loadgen/driver/drivertest"
	_ "github.com/protobench/protobench/internal/loadgen/driver/http"
	"github.com/protobench/protobench/internal/servertest"
)

// Every method on connect-go's server in both encodings, both HTTP versions and both models
// (both on the HTTP driver's event loops; a body over one HTTP/2 frame on net/http's client).
func TestMethodsAgainstRealServer(t *testing.T) {
	ep := servertest.Start(t, servertest.Connect)
	// duration is the measured window: a 100 kB JSON Echo (133 kB of base64 each way) needs a
	// window that fits several on a loaded machine.
	methods := []struct{ method, payload, duration string }{
		{contract.MethodGetUser, "0", "500ms"},
		{contract.MethodEcho, "0", "500ms"},
		{contract.MethodEcho, "100", "500ms"},
		{contract.MethodEcho, "100000", "3s"}, // larger than one HTTP/2 frame: net/http's client
		{contract.MethodMultiply, "0", "500ms"},
		{contract.MethodDivide, "0", "500ms"},
	}
	for _, version := range []string{"1.1", "2"} {
		for _, encoding := range []string{"protobuf", "json"} {
			for _, rate := range []string{"0", "200"} {
				for _, m := range methods {
					t.Run(m.method+" "+m.payload+" http "+version+" "+encoding+" rate "+rate, func(t *testing.T) {
						drivertest.RunClean(t, true, "--target", "connect://"+ep.Main, "--method", m.method,
							"--payload-bytes", m.payload, "--http-version", version, "--encoding", encoding, "--rate", rate,
							"--connections", "2", "--concurrency", "2", "--duration", m.duration, "--warmup", "100ms")
					})
				}
			}
		}
	}
}

// A payload above the server's limit is Connect's resource_exhausted, HTTP 429.
func TestErrorStatusIsClassified(t *testing.T) {
	ep := servertest.Start(t, servertest.Connect, servertest.WithMaxPayloadBytes(1000))
	for _, version := range []string{"1.1", "2"} {
		cfg, _, err := loadgen.ParseArgs([]string{
			"--target", "connect://" + ep.Main, "--method", "Echo", "--payload-bytes", "2000", "--http-version", version,
			"--connections", "1", "--concurrency", "1", "--duration", "300ms", "--warmup", "0s",
		}, io.Discard)
		if err != nil {
			t.Fatal(err)
		}
		res, _ := loadgen.Run(context.Background(), cfg, loadgen.RunOptions{})
		if res.Requests == 0 || res.Errors != res.Requests || res.ErrorsByCode["http:429"] != res.Errors {
			t.Fatalf("HTTP/%s: requests %d errors %d by code %v, want every request to fail with http:429", version, res.Requests, res.Errors, res.ErrorsByCode)
		}
	}
}

// --http-version and --encoding are shared with the http driver, and refused elsewhere; the
// REST-only flags are refused on connect://.
func TestSharedFlags(t *testing.T) {
	for _, args := range [][]string{
		{"--target", "connect://127.0.0.1:1", "--http-version", "3"},
		{"--target", "connect://127.0.0.1:1", "--encoding", "xml"},
		{"--target", "connect://127.0.0.1:1", "--http-path", "/x"},
		{"--target", "connect://127.0.0.1:1", "--method", "EchoStream"},
		{"--target", "grpc://127.0.0.1:1", "--encoding", "json"},
	} {
		if _, _, err := loadgen.ParseArgs(args, io.Discard); err == nil {
			t.Errorf("%q parsed, want a usage error", args)
		}
	}
	cfg, _, err := loadgen.ParseArgs([]string{"--target", "connect://127.0.0.1:1", "--http-version", "2", "--encoding", "json"}, io.Discard)
	if err != nil || cfg.Options["http_version"] != "2" || cfg.Options["encoding"] != "json" {
		t.Fatalf("connect:// with shared flags: %v, options %v", err, cfg)
	}
	cfg, _, err = loadgen.ParseArgs([]string{"--target", "http://127.0.0.1:1", "--http-version", "2", "--encoding", "protobuf"}, io.Discard)
	if err != nil || cfg.Options["http_version"] != "2" || cfg.Options["encoding"] != "protobuf" {
		t.Fatalf("http:// with shared flags: %v, options %v", err, cfg)
	}
}
