// Command bench-aa is the lab bench that calibrates protobench's verdicts on the real stack
// (bench/aabench; docs/statistics.md): it runs `protobench gate` with one image as both builds
// many times and counts the false alarms, then with a known slowdown injected in head
// (handler_cpu) and counts the finds, and writes the between-run spread compare --calibration
// reads:
//
//	go run ./bench/cmd/bench-aa --image IMAGE --runs 20 --head-cpu 2us,5us
package main

import (
	"github.com/protobench/protobench/bench/aabench"
	"github.com/protobench/protobench/bench/benchcli"
)

func main() { benchcli.Main(aabench.Command) }
