package main

import (
	"context"
	"os"
	"os/signal"

	"github.com/protobench/protobench/internal/loadgen/loadcmd"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	if len(os.Args) > 1 && os.Args[1] == "load" {
		os.Exit(loadcmd.Command(ctx, os.Args[2:], os.Stdout, os.Stderr))
	}
	os.Exit(2)
}
