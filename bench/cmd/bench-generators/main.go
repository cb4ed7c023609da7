// Command bench-generators is the lab bench that asks whether our load generator is ever the
// bottleneck (bench/genbench; docs/generator.md). It is kept out of the protobench binary, which
// users run, because it answers a question about the suite itself:
//
//	go run ./bench/cmd/bench-generators --duration 5s --warmup 1s --repeats 3
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"

	"github.com/protobench/protobench/bench/genbench"

	// Tool adapters register themselves with internal/tool: the bench runs each tool with the
	// command line its adapter builds for a scenario step.
	_ "github.com/protobench/protobench/internal/tool/all"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	os.Exit(genbench.Command(ctx, os.Args[1:], os.Stdout, os.Stderr))
}
