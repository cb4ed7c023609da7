package compare

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"io"
	"math"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/protobench/protobench/internal/results"
)

// Command is `protobench compare [flags] A B [C ...]` (each folder against A) or
// `protobench compare [flags] A1 A2 ... vs B1 B2 ...` (two sides of several runs each): it prints
// the comparison as Markdown and writes it as HTML, by default to A/compare.html (A is the
// baseline), where the relative links to the other folders' reports work when the folders sit
// side by side.
func Command(_ context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("compare", flag.ContinueOnError)
	fs.SetOutput(stderr)
	force := fs.Bool("force", false, "compare folders even when they ran different scenarios")
	out := fs.String("out", "", "where to write the HTML comparison (default: <first folder>/"+File+")")
	power := fs.Float64("power", 0.8, "the power a change not found must have had to find --effect; below it the row reads inconclusive")
	effect := fs.String("effect", "5%", "the smallest change that matters, as a percentage")
	calib := fs.String("calibration", "", "between-run spread measured by bench-aa (JSON); default: the recorded real A/A in docs/statistics.md")
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: protobench compare [flags] <baseline folder> <folder> [<folder> ...]\n       protobench compare [flags] A1 A2 [...] vs B1 B2 [...]")
		fs.PrintDefaults()
	}
	if err := fs.Parse(flagsFirst(args)); err != nil {
		return 2
	}
	if fs.NArg() < 2 {
		fs.Usage()
		return 2
	}
	opts := Options{Force: *force, Power: *power}
	if !(*power > 0 && *power < 1) {
		fmt.Fprintf(stderr, "protobench compare: --power %v: want a probability between 0 and 1, such as 0.8\n", *power)
		return 2
	}
	e, err := ParsePercent(*effect)
	if err != nil || e <= 0 {
		fmt.Fprintf(stderr, "protobench compare: --effect %q: want a positive percentage such as 5%%\n", *effect)
		return 2
	}
	opts.Effect = 1 + e/100
	if *calib != "" {
		if opts.Calibration, err = LoadCalibration(*calib); err != nil {
			fmt.Fprintln(stderr, "protobench compare:", err)
			return 2
		}
	}
	sides, err := splitSides(fs.Args())
	if err != nil {
		fmt.Fprintln(stderr, "protobench compare:", err)
		return 2
	}
	c, err := CompareSides(sides, opts)
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
			if (name == "out" || name == "o" || name == "power" || name == "effect" || name == "calibration") && !strings.Contains(a, "=") && i+1 < len(args) {
				flags = append(flags, args[i+1])
				i++
			}
		default:
			rest = append(rest, a)
		}
	}
	return append(flags, rest...)
}

// splitSides reads the folders: "A B C" is A against B and A against C, one folder a side;
// "A1 A2 vs B1 B2" is two sides of several folders.
func splitSides(args []string) ([][]string, error) {
	at := -1
	for i, a := range args {
		if a == "vs" {
			if at >= 0 {
				return nil, fmt.Errorf("\"vs\" appears twice: give two sides, A1 A2 vs B1 B2")
			}
			at = i
		}
	}
	if at < 0 {
		sides := [][]string{args[:1]}
		for _, d := range args[1:] {
			sides = append(sides, []string{d})
		}
		return sides, nil
	}
	if at == 0 || at == len(args)-1 {
		return nil, fmt.Errorf("\"vs\" needs folders on both sides: A1 A2 vs B1 B2")
	}
	return [][]string{args[:at], args[at+1:]}, nil
}

// ParsePercent reads "5%" or "5" (and "5 %") as 5.
func ParsePercent(s string) (float64, error) {
	t := strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(s), "%"))
	v, err := strconv.ParseFloat(t, 64)
	if err != nil || math.IsNaN(v) || math.IsInf(v, 0) {
		return 0, fmt.Errorf("%q is not a percentage such as 5%%", s)
	}
	return v, nil
}
