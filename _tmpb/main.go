package main

import (
	"context"
	"os"
	"os/signal"
	"runtime/pprof"

	"github.com/protobench/protobench/bench/genbench"
	"github.com/protobench/protobench/internal/loadgen/loadcmd"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	if p := os.Getenv("PB_CPUPROFILE"); p != "" {
		f, _ := os.Create(p)
		pprof.StartCPUProfile(f)
		defer pprof.StopCPUProfile()
	}
	code := 2
	if len(os.Args) > 1 && os.Args[1] == "load" {
		code = loadcmd.Command(ctx, os.Args[2:], os.Stdout, os.Stderr)
	}
	if len(os.Args) > 1 && os.Args[1] == "bench-generators" {
		code = genbench.Command(ctx, os.Args[2:], os.Stdout, os.Stderr)
	}
	pprof.StopCPUProfile()
	os.Exit(code)
}
