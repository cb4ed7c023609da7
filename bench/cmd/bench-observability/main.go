// Command bench-observability is the lab bench that measures what the observability stack costs
// a step (bench/obsbench; docs/observability.md). It is kept out of the protobench binary, which
// users run, because it answers a question about the suite itself:
//
//	go run ./bench/cmd/bench-observability --repeats 20
package main

import (
	"github.com/protobench/protobench/bench/benchcli"
	"github.com/protobench/protobench/bench/obsbench"

	// Tool adapters register themselves with internal/tool.
	_ "github.com/protobench/protobench/internal/tool/all"
)

func main() { benchcli.Main(obsbench.Command) }
