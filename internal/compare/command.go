package compare

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"io"
	"path/filepath"
	"strings"

	"github.com/protobench/protobench/internal/results"
)

// Command is `protobench compare [--force] [--out FILE] A B [C ...]`: it prints the comparison
// as Markdown and writes it as HTML, by default to A/compare.html (A is the baseline), where the
// relative links to the other folders' reports work when the folders sit side by side.
func Command(_ context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("compare", flag.ContinueOnError)
	fs.SetOutput(stderr)
	force := fs.Bool("force", false, "compare folders even when they ran different scenarios")
	out := fs.String("out", "", "where to write the HTML comparison (default: <first folder>/"+File+")")
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: protobench compare [--force] [--out FILE] <baseline folder> <folder> [<folder> ...]")
		fs.PrintDefaults()
	}
	if err := fs.Parse(flagsFirst(args)); err != nil {
		return 2
	}
	if fs.NArg() < 2 {
		fs.Usage()
		return 2
	}
	c, err := Compare(fs.Args(), *force)
	if err != nil {
		fmt.Fprintln(stderr, "protobench", err)
		return 2
	}
	for _, w := range c.Warnings {
		fmt.Fprintln(stderr, "protobench compare: warning:", w)
	}
	if err := c.Markdown(stdout); err != nil {
		return 1
	}
	path := *out
	if path == "" {
		path = filepath.Join(fs.Arg(0), File)
	}
	var buf bytes.Buffer
	if err := c.HTML(&buf, path); err != nil {
		fmt.Fprintln(stderr, "protobench compare:", err)
		return 1
	}
	if err := results.WriteFileAtomic(path, buf.Bytes()); err != nil {
		fmt.Fprintln(stderr, "protobench compare:", err)
		return 1
	}
	fmt.Fprintf(stdout, "\nHTML: %s\n", path)
	return 0
}

// flagsFirst moves flags before the folders, so `compare A B --force` works as users type it.
func flagsFirst(args []string) []string {
	var flags, rest []string
	for i := 0; i < len(args); i++ {
		a := args[i]
		switch {
		case a == "--":
			rest = append(rest, args[i+1:]...)
			i = len(args)
		case strings.HasPrefix(a, "-"):
			flags = append(flags, a)
			name := strings.TrimLeft(a, "-")
			if (name == "out" || name == "o") && i+1 < len(args) {
				flags = append(flags, args[i+1])
				i++
			}
		default:
			rest = append(rest, a)
		}
	}
	return append(flags, rest...)
}
