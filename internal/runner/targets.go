package runner

import "fmt"

// endpoint is where a target's server listens on the compose network, and which protocol
// scheme the load tools must speak to it.
type endpoint struct {
	Service string // compose service
	Scheme  string // tool.Invocation.Scheme and the --target URL scheme of protobench load
	Port    int
}

// endpoints maps a scenario target to its compose service. The ports are the servers' defaults;
// the compose file does not override them, so this table and the servers agree by construction.
var endpoints = map[string]endpoint{
	"grpc":        {Service: "grpc", Scheme: "grpc", Port: 50051},
	"rest":        {Service: "rest", Scheme: "http", Port: 8080},
	"netrpc":      {Service: "netrpc", Scheme: "netrpc", Port: 4200},
	"zeromq":      {Service: "zeromq", Scheme: "zmq", Port: 5555},
	"python-grpc": {Service: "python-grpc", Scheme: "grpc", Port: 50051},
}

func endpointFor(target string) (endpoint, error) {
	e, ok := endpoints[target]
	if !ok {
		return endpoint{}, fmt.Errorf("no compose service for target %q", target)
	}
	return e, nil
}

func (e endpoint) address() string { return fmt.Sprintf("%s:%d", e.Service, e.Port) }
