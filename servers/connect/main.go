// Command protobench-connect-server serves the workload contract with connect-go: the Connect
// protocol, gRPC and gRPC-Web on one port, over HTTP/1.1 and h2c.
//
//	go run ./servers/connect --listen 127.0.0.1:8081
//
// Flags and environment variables: run with -h. All logic is in internal/server/connectserver.
package main

import (
	"github.com/protobench/protobench/internal/server/connectserver"
	"github.com/protobench/protobench/internal/serverkit"
)

func main() { serverkit.Main(connectserver.Spec) }
