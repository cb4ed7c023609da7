// Package loadcmd is the `protobench load` subcommand: the load generator's engine with every
// protocol driver linked in. It exists apart from package loadgen because the drivers import
// loadgen to register themselves, so loadgen cannot import them.
package loadcmd

import (
	"context"
	"io"

	"github.com/protobench/protobench/internal/loadgen"
	// Every registry protocol's driver is linked in by drivers_gen.go and drivers_cgo_gen.go,
	// which `protobench generate` writes from internal/targets.
)

// Command runs `protobench load` with args (without the subcommand name) and returns the exit
// code: 0 success, 1 the run failed or ended early, 2 bad flags or target URL.
func Command(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	return loadgen.Command(ctx, args, stdout, stderr)
}
