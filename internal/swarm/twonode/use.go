package twonode

import (
	"context"
	"os"
	"testing"
	"time"

	"github.com/protobench/protobench/internal/swarm/swarmtest"
)

// Use gives a test a two-node swarm: this machine's daemon as the manager of a swarm the test
// initialises (through swarmtest, under its lock, advertising the host end of the veth) and the
// second node joined to it. It skips the test, with the exact command and output, where the
// machine refuses a step: not root, no network namespaces, no dockerd in one, no join over the
// veth. Everything is undone at cleanup, the node before the swarm is left.
//
// It skips too when this daemon is already in a swarm: a user's swarm gets no extra node.
//
// Swarm tests of other packages may hold the swarm lock for minutes, so the caller's own
// deadline should start when Use returns; Use bounds its own steps.
func Use(t testing.TB, o Options) (*Cluster, *swarmtest.Swarm) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	if os.Geteuid() != 0 {
		t.Skip("a second dockerd in a network namespace needs root")
	}
	if o.Log == nil {
		o.Log = logWriter{t}
	}
	// The namespace and the veth come first: the swarm must advertise an address on them.
	c, err := Prepare(ctx, o)
	if err != nil {
		t.Skipf("this machine refuses a second dockerd in a network namespace: %v", err)
	}
	closeIt := func() {
		if err := c.Close(context.Background()); err != nil {
			t.Errorf("twonode Close: %v", err)
		}
	}
	t.Cleanup(closeIt)
	sw := swarmtest.UseWith(t, swarmtest.Options{AdvertiseAddr: c.HostAddr})
	ctx, cancel = context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	// Registered after swarmtest's cleanups, so it runs before the swarm is left; the first
	// registration then finds nothing left to do.
	t.Cleanup(closeIt)
	if !sw.Created {
		t.Skip("this daemon is already in a swarm; the two-node check adds a node only to a swarm it created itself")
	}
	if err := c.Join(ctx); err != nil {
		t.Skipf("the second node cannot join this machine's swarm over the veth: %v", err)
	}
	return c, sw
}

// logWriter sends the cluster's step lines to the test log.
type logWriter struct{ t testing.TB }

func (w logWriter) Write(p []byte) (int, error) {
	w.t.Helper()
	w.t.Log(string(trimNewline(p)))
	return len(p), nil
}

func trimNewline(p []byte) []byte {
	if n := len(p); n > 0 && p[n-1] == '\n' {
		return p[:n-1]
	}
	return p
}
