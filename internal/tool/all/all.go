// Package all links every tool adapter into a program: importing it registers protobench, ghz,
// wrk, wrk2, h2load and k6 with package tool, the way database/sql drivers register by import.
package all

import (
	// Each adapter registers itself in its init.
	_ "github.com/protobench/protobench/internal/tool/ghz"
	_ "github.com/protobench/protobench/internal/tool/h2load"
	_ "github.com/protobench/protobench/internal/tool/k6"
	_ "github.com/protobench/protobench/internal/tool/protobenchtool"
	_ "github.com/protobench/protobench/internal/tool/wrk"
)
