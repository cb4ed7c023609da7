// Package rounds is how the lab benches that set generators side by side measure one row:
// round robin over the generators, each one's best run kept.
package rounds

import (
	"context"
	"fmt"
	"io"
)

// Best measures each of gens repeats times and keeps each one's best run, in gens' order. The
// repeats go round the generators (A B C A B C ...), not one generator's repeats in a row: on
// a shared or virtual machine the server's cost per request drifts over minutes, and a block
// of runs would hand one generator the good minutes. A generator keeps its first run until a
// later one succeeds and is better by better, or succeeds where the kept one failed; each
// failure is printed to stderr as "<row> with <generator>: <error>". When ctx ends, Best
// returns its error.
func Best[M any](ctx context.Context, stderr io.Writer, row string, gens []string, repeats int,
	measure func(gen string) M, failure func(M) error, better func(got, kept M) bool) ([]M, error) {
	best := make([]M, len(gens))
	for r := 0; r < repeats; r++ {
		for i, g := range gens {
			got := measure(g)
			err := failure(got)
			if err != nil {
				fmt.Fprintf(stderr, "%s with %s: %v\n", row, g, err)
			}
			if r == 0 || (err == nil && (failure(best[i]) != nil || better(got, best[i]))) {
				best[i] = got
			}
			if ctx.Err() != nil {
				return nil, ctx.Err()
			}
		}
	}
	return best, nil
}
