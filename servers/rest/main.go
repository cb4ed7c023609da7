// Command protobench-rest-server serves the workload contract as REST (net/http + JSON).
//
//	go run ./servers/rest --listen 127.0.0.1:8080
//
// Flags and environment variables: run with -h. All logic is in internal/server/restserver.
package main

import (
	"github.com/protobench/protobench/internal/server/restserver"
	"github.com/protobench/protobench/internal/serverkit"
)

func main() { serverkit.Main(restserver.Spec) }
