//go:build !cgo

package loadcmd

import (
	"context"
	"errors"

	"github.com/protobench/protobench/internal/loadgen"
)

// A CLI built without cgo (run.sh does so on a host without libzmq's headers, since the host CLI
// mostly drives containers) still knows the zmq:// scheme, so a user who asks for it learns
// where the driver is instead of reading "unknown scheme".
func init() { loadgen.Register("zmq", zmqUnavailable{}) }

var errNoZMQ = errors.New("this protobench binary was built without cgo, so it has no ZeroMQ driver: " +
	"install libzmq's headers (Debian: libzmq3-dev) and rebuild it, or use the protobench image, which has it")

type zmqUnavailable struct{}

func (zmqUnavailable) Info() loadgen.DriverInfo {
	return loadgen.DriverInfo{TargetName: "zeromq"}
}

func (zmqUnavailable) Check(*loadgen.Config) error { return errNoZMQ }

func (zmqUnavailable) Dial(context.Context, *loadgen.Config, *loadgen.WireBytes) (loadgen.Conn, error) {
	return nil, errNoZMQ
}
