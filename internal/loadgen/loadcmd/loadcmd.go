// Package loadcmd is the `protobench load` subcommand: the load generator's engine with every
// protocol driver linked in. It exists apart from package loadgen because the drivers import
// loadgen to register themselves, so loadgen cannot import them.
package loadcmd

import (
	"context"
	"io"

	"github.com/protobench/protobench/internal/loadgen"
	// Each driver registers its URL scheme in init.
	_ "github.com/protobench/protobench/internal/loadgen/driver/grpc"
	_ "github.com/protobench/protobench/internal/loadgen/driver/http"
	_ "github.com/protobench/protobench/internal/loadgen/driver/netrpc"
	// The ZeroMQ driver needs cgo and libzmq, so it is linked in by zmq_cgo.go.
)

// Command runs `protobench load` with args (without the subcommand name) and returns the exit
// code: 0 success, 1 the run failed or ended early, 2 bad flags or target URL.
func Command(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	return loadgen.Command(ctx, args, stdout, stderr)
}
