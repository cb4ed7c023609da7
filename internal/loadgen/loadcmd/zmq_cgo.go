//go:build cgo

package loadcmd

// The ZeroMQ driver is built on libzmq through cgo.
import _ "github.com/protobench/protobench/internal/loadgen/driver/zmq"
