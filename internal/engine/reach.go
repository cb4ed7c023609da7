package engine

import "context"

// ServerReacher is an engine whose host reaches a service's container directly, so that the
// runner can read a server's own /metrics at the instants it chooses (servercount): Compose and
// ComposeFast, whose containers sit on a docker bridge the host routes to. A swarm's overlay network is not
// reachable from the host, and a dry run has no server.
type ServerReacher interface {
	// ServiceAddress is the address (an IP) of service's current container.
	ServiceAddress(ctx context.Context, service string) (string, error)
}
