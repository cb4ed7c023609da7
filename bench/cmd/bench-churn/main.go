// Command bench-churn is the lab bench that sets our generator's connection churn beside
// openssl s_time (TLS handshakes) and wrk with Connection: close (cleartext HTTP/1.1) on one
// server, both pinned alike (bench/churnbench; docs/tls.md):
//
//	go run ./bench/cmd/bench-churn --duration 5s --connections 8 --repeats 3
package main

import (
	"github.com/protobench/protobench/bench/benchcli"
	"github.com/protobench/protobench/bench/churnbench"
)

func main() { benchcli.Main(churnbench.Command) }
