// Command bench-generators is the lab bench that asks whether our load generator is ever the
// bottleneck (bench/genbench; docs/generator.md). It is kept out of the protobench binary, which
// users run, because it answers a question about the suite itself:
//
//	go run ./bench/cmd/bench-generators --duration 5s --warmup 1s --repeats 3
package main

import (
	"github.com/protobench/protobench/bench/benchcli"
	"github.com/protobench/protobench/bench/genbench"

	// Tool adapters register themselves with internal/tool: the bench runs each tool with the
	// command line its adapter builds for a scenario step.
	_ "github.com/protobench/protobench/internal/tool/all"
)

func main() { benchcli.Main(genbench.Command) }
