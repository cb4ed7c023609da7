package servercount_test

import (
	"context"
	"io"
	"testing"

	"github.com/protobench/protobench/internal/loadgen"
	_ "github.com/protobench/protobench/internal/loadgen/driver/grpc"
	"github.com/protobench/protobench/internal/servercount"
	"github.com/protobench/protobench/internal/servertest"
)

// TestGeneratorCountsAddUp: our generator's warm-up and measured counts, split by the same
// flag on each request, add up to what the server answered over the whole run, OK and errors
// alike, give or take the requests in flight when it stopped. (Its per-second timeseries,
// split by the collector's tick, cannot: a late tick puts the window's first requests in the
// warm-up's last point too, which on a busy host made the tool count tens more successes than
// the server answered.)
func TestGeneratorCountsAddUp(t *testing.T) {
	ep := servertest.Start(t, "grpc", servertest.WithKnob("PROTOBENCH_GRPC_FAIL_EVERY", "3"))
	url := "http://" + ep.Metrics + "/metrics"
	ctx := context.Background()
	const conns, streams = 2, 4
	cfg, _, err := loadgen.ParseArgs([]string{"--target", "grpc://" + ep.Main, "--method", "GetUser",
		"--connections", "2", "--concurrency", "4", "--warmup", "400ms", "--duration", "800ms"}, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	before, err := servercount.Read(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	res, err := loadgen.Run(ctx, cfg, loadgen.RunOptions{})
	if err != nil {
		t.Fatal(err)
	}
	after, err := servercount.Read(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	run := after.Sub(before)
	if res.WarmupRequests <= 0 || res.Requests <= 0 || run.Errors <= 0 {
		t.Fatalf("warm-up %d, measured %d requests, server %+v: want all three", res.WarmupRequests, res.Requests, run)
	}
	toolOK := res.WarmupRequests - res.WarmupErrors + res.Requests - res.Errors
	toolErr := res.WarmupErrors + res.Errors
	if bad, why := servercount.Mismatch(servercount.Check{ToolOK: toolOK, ServerOK: run.OK, InFlight: conns * streams}); bad {
		t.Errorf("successes: %s", why)
	}
	if d := toolErr - run.Errors; d > conns*streams || -d > conns*streams {
		t.Errorf("errors: the tool counted %d, the server %d", toolErr, run.Errors)
	}
}
