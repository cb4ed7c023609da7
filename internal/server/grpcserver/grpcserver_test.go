package grpcserver

import (
	"context"
	"fmt"
	"net"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/protobench/protobench/internal/contract/benchpb"
	"github.com/protobench/protobench/internal/serverkit"
	"github.com/protobench/protobench/internal/targets"
)

// TestRegistryKnobsReachTheServer sets each of the registry's gRPC knobs through its environment
// variable, as compose passes it, and finds the value in the configuration the server resolves
// (what /config reports).
func TestRegistryKnobsReachTheServer(t *testing.T) {
	tg, ok := targets.Lookup("grpc")
	if !ok {
		t.Fatal("no grpc target in the registry")
	}
	for _, name := range tg.KnobNames() {
		env := tg.Knobs[name].Env
		// A value of the knob's own kind: 4096 for the counts and sizes, 4µs for a duration.
		value := "4096"
		if tg.Knobs[name].Kind == targets.KnobDuration {
			value = "4µs"
		}
		lookup := func(k string) (string, bool) {
			if k == env {
				return value, true
			}
			return "", false
		}
		cfg, _, err := serverkit.ParseConfig(Spec, nil, lookup)
		if err != nil {
			t.Fatalf("%s=%s: %v", env, value, err)
		}
		found := false
		if env == "PROTOBENCH_MAX_PAYLOAD_BYTES" { // every server's, not in Knobs
			found = true
			if cfg.MaxPayloadBytes != 4096 {
				t.Errorf("%s=4096 resolved to %d", env, cfg.MaxPayloadBytes)
			}
		}
		if env == "PROTOBENCH_HANDLER_CPU" { // every Go server's, not in Knobs
			found = true
			if cfg.HandlerCPU.String() != value {
				t.Errorf("%s=%s resolved to %v", env, value, cfg.HandlerCPU)
			}
		}
		for _, k := range cfg.Knobs {
			if k.Env == env {
				found = true
				if fmt.Sprint(k.Value) != value {
					t.Errorf("%s=%s resolved to %v", env, value, k.Value)
				}
			}
		}
		if !found {
			t.Errorf("registry knob %s (%s) is not a flag of the gRPC server: %+v", name, env, cfg.Knobs)
		}
	}
}

// TestStreamWorkersServeEveryCall runs the server with a few stream workers on a real socket and
// sends more concurrent calls than workers over one connection: the calls beyond the workers
// still get served (grpc-go starts goroutines for them).
func TestStreamWorkersServeEveryCall(t *testing.T) {
	srv := New(Options{StreamWorkers: 4}, nil)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go srv.Serve(ln)
	defer srv.Shutdown(context.Background())
	conn, err := grpc.NewClient(ln.Addr().String(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	client := benchpb.NewBenchClient(conn)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var wg sync.WaitGroup
	errs := make(chan error, 64)
	for i := range 64 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			payload := []byte(fmt.Sprintf("call %d", i))
			resp, err := client.Echo(ctx, &benchpb.EchoRequest{Payload: payload})
			if err == nil && string(resp.GetPayload()) != string(payload) {
				err = fmt.Errorf("echo %q came back as %q", payload, resp.GetPayload())
			}
			if err != nil {
				errs <- err
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}
