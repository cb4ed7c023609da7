// Command protobench-netrpc-server serves the workload contract with Go's net/rpc (gob over TCP),
// including seed 004's Arith service with its exact types.
//
//	go run ./servers/netrpc --listen 127.0.0.1:4200
//
// Flags and environment variables: run with -h. All logic is in internal/server/netrpcserver.
package main

import (
	"github.com/protobench/protobench/internal/server/netrpcserver"
	"github.com/protobench/protobench/internal/serverkit"
)

func main() { serverkit.Main(netrpcserver.Spec) }
