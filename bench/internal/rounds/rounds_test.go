package rounds

import (
	"bytes"
	"context"
	"errors"
	"slices"
	"testing"
)

type run struct {
	gen  string
	rate float64
	err  error
}

// TestBest: the runs go round the generators, a better success replaces the kept run, a failure
// never does, and a success replaces a kept failure.
func TestBest(t *testing.T) {
	script := []run{
		{"a", 10, nil}, {"b", 0, errors.New("refused")},
		{"a", 12, nil}, {"b", 5, nil},
		{"a", 20, errors.New("timeout")}, {"b", 4, nil},
	}
	var order []string
	next := 0
	measure := func(gen string) run {
		order = append(order, gen)
		r := script[next]
		next++
		return r
	}
	var stderr bytes.Buffer
	got, err := Best(context.Background(), &stderr, "grpc", []string{"a", "b"}, 3, measure,
		func(r run) error { return r.err }, func(got, kept run) bool { return got.rate > kept.rate })
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"a", "b", "a", "b", "a", "b"}; !slices.Equal(order, want) {
		t.Errorf("order %v, want %v", order, want)
	}
	if got[0].rate != 12 || got[1].rate != 5 {
		t.Errorf("best %+v", got)
	}
	if want := "grpc with b: refused\ngrpc with a: timeout\n"; stderr.String() != want {
		t.Errorf("stderr %q, want %q", stderr.String(), want)
	}
}

func TestBestStopsWithContext(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	runs := 0
	_, err := Best(ctx, &bytes.Buffer{}, "row", []string{"a", "b"}, 2, func(string) run {
		runs++
		cancel()
		return run{}
	}, func(r run) error { return r.err }, func(got, kept run) bool { return false })
	if !errors.Is(err, context.Canceled) || runs != 1 {
		t.Errorf("err %v after %d runs", err, runs)
	}
}
