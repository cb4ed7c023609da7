// Command devtool is a temporary harness for `protobench images` until cmd/protobench wires it.
package main

import (
	"context"
	"os"

	"github.com/protobench/protobench/internal/images"
)

func main() {
	os.Exit(images.Command(context.Background(), os.Args[1:], os.Stdout, os.Stderr))
}
