package runner

import (
	"fmt"

	"github.com/protobench/protobench/internal/scenario"
	"github.com/protobench/protobench/internal/targets"
)

// endpoint is where a target's server listens on the compose network, and which protocol
// scheme the load tools must speak to it.
type endpoint struct {
	Service string // compose service
	Scheme  string // tool.Invocation.Scheme and the --target URL scheme of protobench load
	Port    int
}

// endpointFor resolves a run's target: the scenario's own server, or a reference target from the
// registry (whose ports are the servers' defaults, which the generated compose file keeps).
func endpointFor(r scenario.Run) (endpoint, error) {
	if r.Custom != nil {
		return endpoint{Service: r.Custom.Name, Scheme: r.Custom.Protocol, Port: r.Custom.Port}, nil
	}
	t, ok := targets.Lookup(r.Target)
	if !ok {
		return endpoint{}, fmt.Errorf("no compose service for target %q", r.Target)
	}
	return endpoint{Service: t.Name, Scheme: t.Protocol, Port: t.Port}, nil
}

func (e endpoint) address() string { return fmt.Sprintf("%s:%d", e.Service, e.Port) }
