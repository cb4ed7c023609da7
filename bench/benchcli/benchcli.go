// Package benchcli is what the lab benches' commands (bench/cmd) share: how a command starts,
// how it reads its flags and how its errors become an exit code, so that every bench answers
// alike.
package benchcli

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
)

// Main runs command as a program: its context ends on an interrupt or SIGTERM, so that a bench
// stops its processes and containers on the way out, and its result is the exit code.
func Main(command func(ctx context.Context, args []string, stdout, stderr io.Writer) int) {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	os.Exit(command(ctx, os.Args[1:], os.Stdout, os.Stderr))
}

// FlagSet is the flag set of command name: it prints its usage and errors to stderr and returns
// them instead of exiting, so that Run decides the exit code.
func FlagSet(name string, stderr io.Writer) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	return fs
}

// Run parses args with parse and runs the bench with run, and returns the exit code: 0 when it
// ran (whatever it measured) or printed its help, 1 when run failed, 2 for bad flags. Errors
// are printed to stderr after the command's name.
func Run[O any](name string, args []string, stderr io.Writer, parse func(args []string, stderr io.Writer) (O, error), run func(O) error) int {
	o, err := parse(args, stderr)
	if err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		fmt.Fprintf(stderr, "%s: %v\n", name, err)
		return 2
	}
	if err := run(o); err != nil {
		fmt.Fprintf(stderr, "%s: %v\n", name, err)
		return 1
	}
	return 0
}
