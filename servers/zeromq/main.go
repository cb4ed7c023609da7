// Command protobench-zeromq-server serves the workload contract over ZeroMQ (pebbe/zmq4 on
// libzmq): a ROUTER for request/reply, a PULL sink for the pipeline and a PUB for fan-out.
//
//	go run ./servers/zeromq --listen 127.0.0.1:5555 --pull-listen 127.0.0.1:5556 --pub-listen 127.0.0.1:5557
//
// Flags and environment variables: run with -h. All logic is in internal/server/zmqserver.
package main

import (
	"github.com/protobench/protobench/internal/server/zmqserver"
	"github.com/protobench/protobench/internal/serverkit"
)

func main() { serverkit.Main(zmqserver.Spec) }
