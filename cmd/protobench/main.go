// Command protobench is the one binary of the protobench lab: it runs scenarios, generates load,
// builds the local images and writes reports. run.sh only builds it and hands over.
package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"sort"
	"syscall"
)

// command is one subcommand. Each package that owns a piece of the CLI exposes a function of this
// shape, so adding a subcommand is one line in commands and never a switch.
type command struct {
	summary string
	run     func(ctx context.Context, args []string, stdout, stderr io.Writer) int
	// developer: a command for those who change protobench itself, listed apart in the help.
	developer bool
}

var commands = map[string]command{}

func register(name, summary string, run func(ctx context.Context, args []string, stdout, stderr io.Writer) int) {
	commands[name] = command{summary: summary, run: run}
}

// registerDeveloper registers a command that only changing protobench needs.
func registerDeveloper(name, summary string, run func(ctx context.Context, args []string, stdout, stderr io.Writer) int) {
	commands[name] = command{summary: summary, run: run, developer: true}
}

func usage(w io.Writer) {
	fmt.Fprintln(w, "usage: protobench <command> [flags]")
	for _, dev := range []bool{false, true} {
		if dev {
			fmt.Fprintln(w, "\nfor developers of protobench:")
		} else {
			fmt.Fprintln(w, "\ncommands:")
		}
		names := make([]string, 0, len(commands))
		for n, c := range commands {
			if c.developer == dev {
				names = append(names, n)
			}
		}
		sort.Strings(names)
		for _, n := range names {
			fmt.Fprintf(w, "  %-18s %s\n", n, commands[n].summary)
		}
	}
	fmt.Fprintln(w, "\nRun 'protobench <command> -h' for a command's flags.")
}

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	os.Exit(dispatch(ctx, os.Args[1:], os.Stdout, os.Stderr))
}

func dispatch(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 || args[0] == "-h" || args[0] == "--help" || args[0] == "help" {
		usage(stdout)
		return 0
	}
	c, ok := commands[args[0]]
	if !ok {
		fmt.Fprintf(stderr, "protobench: unknown command %q\n\n", args[0])
		usage(stderr)
		return 2
	}
	return c.run(ctx, args[1:], stdout, stderr)
}
