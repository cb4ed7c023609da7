// Package serverkit is the part every protobench Go server shares: configuration from flags and
// environment (flag beats env beats default), Prometheus metrics with the contract's names on a
// private registry, the metrics listener with /metrics, /healthz and /config, the --probe mode
// compose uses as a healthcheck, GOMAXPROCS and cgroup-quota logging, and graceful shutdown.
//
// A protocol package describes itself with a Spec (its name, default port, knobs and a Builder
// that binds its listeners). A server's main is then one line, serverkit.Main(spec), and tests
// start the very same code in-process with Start.
package serverkit
