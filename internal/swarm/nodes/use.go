package nodes

import (
	"context"
	"os"
	"testing"
	"time"

	"github.com/protobench/protobench/internal/swarm/swarmtest"
)

// Use gives a test a swarm of this machine's daemon and o.Nodes namespaced nodes: the daemon as
// the manager of a swarm the test initialises (through swarmtest, under its lock, advertising
// the host's address on the LAN) and the nodes joined to it as workers. It skips the test, with
// the exact command and output, where the machine refuses a step: not root, no network
// namespaces, no dockerd in one, no join over the LAN. Everything is undone at cleanup, the
// nodes before the swarm is left.
//
// It skips too when this daemon is already in a swarm: a user's swarm gets no extra nodes.
//
// Swarm tests of other packages may hold the swarm lock for minutes, so the caller's own
// deadline should start when Use returns; Use bounds its own steps.
func Use(t testing.TB, o Options) (*Cluster, *swarmtest.Swarm) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("a dockerd in a network namespace needs root")
	}
	if o.Log == nil {
		o.Log = logWriter{t}
	}
	if o.Nodes == 0 {
		o.Nodes = 1
	}
	// The namespaces and the LAN come first: the swarm must advertise an address on it. Each
	// node's dockerd takes a few seconds to start.
	ctx, cancel := context.WithTimeout(context.Background(), time.Duration(2+o.Nodes)*time.Minute)
	defer cancel()
	c, err := Prepare(ctx, o)
	if err != nil {
		t.Skipf("this machine refuses a dockerd in a network namespace: %v", err)
	}
	closeIt := func() {
		if err := c.Close(context.Background()); err != nil {
			t.Errorf("nodes Close: %v", err)
		}
	}
	t.Cleanup(closeIt)
	sw := swarmtest.UseWith(t, swarmtest.Options{AdvertiseAddr: c.HostAddr})
	ctx, cancel = context.WithTimeout(context.Background(), time.Duration(2+o.Nodes)*time.Minute)
	defer cancel()
	// Registered after swarmtest's cleanups, so it runs before the swarm is left; the first
	// registration then finds nothing left to do.
	t.Cleanup(closeIt)
	if !sw.Created {
		t.Skip("this daemon is already in a swarm; the multi-node checks add nodes only to a swarm they created themselves")
	}
	if err := c.Join(ctx); err != nil {
		t.Skipf("the nodes cannot join this machine's swarm over the LAN: %v", err)
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
